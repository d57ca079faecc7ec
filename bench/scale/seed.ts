// The two databases of `npm run bench -- scale` (bench/scale.bench.ts), made
// on DATABASE_URL's server with set-based statements:
//
//   scale:      BENCH_SCALE_TENANTS (10,000) tenants in a three-level
//               hierarchy, BENCH_SCALE_DEPTS (1,000) departments each, and
//               BENCH_SCALE_AUDIT (1,000,000) positioned audit records spread
//               over them;
//   near-empty: the same schema, the platform tenant, and the same small
//               tenant (with the 9 tenants below it, its admin, departments
//               and audit records, at the same ids and positions); nothing else.
//
// BENCH_SHORT=1: 200 tenants x 50 departments and 20,000 records.

import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type postgres from 'postgres';
import { hashPassword } from '../../src/auth/password.js';
import { bootstrap } from '../../src/bootstrap.js';
import { openPostgres, type Sql } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { ADMIN_PASSWORD } from '../harness/database.js';

const SHORT = process.env.BENCH_SHORT === '1';
export const TENANTS = Number(process.env.BENCH_SCALE_TENANTS ?? (SHORT ? 200 : 10_000));
export const DEPTS = Number(process.env.BENCH_SCALE_DEPTS ?? (SHORT ? 50 : 1_000));
export const AUDIT = Number(process.env.BENCH_SCALE_AUDIT ?? (SHORT ? 20_000 : 1_000_000));

/** Tenant number i (0-based) has the code 100000 + i. The small tenant is number 10: level two, with 9 tenants below it. */
export const code = (i: number) => String(100_000 + i);
export const SMALL = 10;
export const SMALL_SUBTREE = [SMALL, ...Array.from({ length: 9 }, (_, k) => SMALL + 1 + k)];
/** The near-empty database holds the small tenant, its parent (tenant 0, level one) and its children. */
const NEAR_EMPTY_TENANTS = [0, ...SMALL_SUBTREE];

/**
 * Tenants `numbers` of the hierarchy: every hundredth (i % 100 = 0) under the
 * platform, every tenth under its hundred, the rest under their ten; the
 * ancestors path as the service writes it (codes from 000000 down, by commas).
 */
async function seedTenants(sql: Sql, numbers: number[] | null): Promise<void> {
  await sql`
    INSERT INTO sys_tenant (tenant_id, tenant_parent, ancestors, tenant_name, company_name, contact_user_name, contact_phone, create_by)
    SELECT (100000 + i)::text,
      CASE WHEN i % 100 = 0 THEN '000000' WHEN i % 10 = 0 THEN (100000 + i - i % 100)::text ELSE (100000 + i - i % 10)::text END,
      CASE WHEN i % 100 = 0 THEN '000000'
           WHEN i % 10 = 0 OR (i - i % 10) % 100 = 0 THEN '000000,' || (100000 + i - i % 100)
           ELSE '000000,' || (100000 + i - i % 100) || ',' || (100000 + i - i % 10) END,
      'Tenant ' || i || '.', 'Company ' || i, 'Contact ' || i, '+86 138 ' || i, 'bench'
    FROM generate_series(0, ${TENANTS - 1}::int) i
    ${numbers ? sql`WHERE i = ANY (${numbers}::int[])` : sql``}
    ORDER BY i`;
  // Their names' trigrams, which the service's tenant writes keep (src/tenants/tenant.grams.ts keepNameGrams): the name filter reads them.
  await sql`
    INSERT INTO sys_tenant_name_gram (gram, id)
    SELECT DISTINCT substr(t.tenant_name, k, 3), t.id
    FROM sys_tenant t CROSS JOIN LATERAL generate_series(1, char_length(t.tenant_name) - 2) k
    WHERE t.create_by = 'bench'
    ON CONFLICT DO NOTHING`;
  await sql`SELECT setval('sys_tenant_code_seq', ${100_000 + TENANTS})`;
}

/**
 * DEPTS departments per tenant (tenant number -1 is the platform): a root, k
 * children under it, the rest spread under those children. Ids are fixed
 * (1000 + (i + 1) * DEPTS + j) so both databases hold the same rows for the
 * tenants they share.
 */
async function seedDepts(sql: Sql, numbers: number[]): Promise<void> {
  const k = Math.max(1, Math.ceil(Math.sqrt(DEPTS)));
  for (let from = 0; from < numbers.length; from += 500) {
    const batch = numbers.slice(from, from + 500);
    await sql`
      INSERT INTO sys_dept (dept_id, tenant_id, parent_id, ancestors, dept_name, order_num, leader, create_by)
      OVERRIDING SYSTEM VALUE
      SELECT b + j, CASE WHEN i < 0 THEN '000000' ELSE (100000 + i)::text END,
        CASE WHEN j = 0 THEN 0 WHEN j <= ${k} THEN b ELSE b + 1 + (j - ${k} - 1) % ${k} END,
        CASE WHEN j = 0 THEN '0' WHEN j <= ${k} THEN '0,' || b ELSE '0,' || b || ',' || (b + 1 + (j - ${k} - 1) % ${k}) END,
        'Dept ' || j, j % 7, CASE WHEN j % 2 = 0 THEN 'Lead ' || j END, 'bench'
      FROM unnest(${batch}::int[]) i, LATERAL (SELECT 1000 + (i + 1) * ${DEPTS} AS b) base, generate_series(0, ${DEPTS - 1}::int) j`;
    if (numbers.length > 1000 && (from / 500) % 4 === 3)
      console.log(`  departments: ${Math.min(from + 500, numbers.length)} of ${numbers.length} tenants`);
  }
  await sql.unsafe(`ALTER TABLE sys_dept ALTER COLUMN dept_id RESTART WITH ${1000 + (TENANTS + 1) * DEPTS}`);
}

/**
 * AUDIT records with positions 1..AUDIT, as the sequencer would have left
 * them: record r belongs to tenant (r * 7919) % TENANTS (every 50th to the
 * platform), times spread over the last 300 days in position order, a mix
 * of actions. `numbers` keeps only the records of those tenants, at the
 * same positions.
 */
async function seedAudit(sql: Sql, numbers: number[] | null): Promise<void> {
  const step = 200_000;
  // A bulk load of positioned records (docs/operations.md): the time blocks widened once at the end.
  for (let from = 1; from <= AUDIT; from += step) {
    await sql`
      INSERT INTO audit_log (position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, request_id, ip, changes)
      SELECT r, now() - make_interval(secs => (1 - r::float8 / ${AUDIT}) * 300 * 86400), t.code,
        CASE WHEN r % 3 = 0 THEN 'ops' || r % 5 ELSE 'admin' END, t.code,
        (ARRAY['dept.update','dept.update','dept.update','dept.create','dept.move','user.update','auth.login','auth.login_failed','tenant.update','dept.delete'])[r % 10 + 1],
        (ARRAY['dept','dept','dept','dept','dept','user','session','session','tenant','dept'])[r % 10 + 1],
        (1000 + (t.i + 1) * ${DEPTS} + r % ${DEPTS})::text, 'bench-' || r, '127.0.0.1',
        jsonb_build_object('deptName', jsonb_build_object('before', 'Dept ' || r, 'after', 'Dept ' || (r + 1)))
      FROM generate_series(${from}::bigint, ${Math.min(AUDIT, from + step - 1)}::bigint) r,
        LATERAL (SELECT CASE WHEN r % 50 = 0 THEN -1 ELSE ((r * 7919) % ${TENANTS})::int END AS i) n,
        LATERAL (SELECT n.i, CASE WHEN n.i < 0 THEN '000000' ELSE (100000 + n.i)::text END AS code) t
      ${numbers ? sql`WHERE n.i = ANY (${numbers}::int[])` : sql``}`;
    if (!numbers && AUDIT > step) console.log(`  audit: ${Math.min(AUDIT, from + step - 1)} of ${AUDIT} records`);
  }
  await sql`SELECT audit_time_blocks_rebuild()`;
  await sql`UPDATE audit_feed SET assigned_position = ${AUDIT}, last_position = ${AUDIT} WHERE id = 1`;
}

/** The small tenant's admin, who signs in. */
async function seedSmallAdmin(sql: Sql): Promise<void> {
  await sql`
    INSERT INTO sys_user (tenant_id, dept_id, user_name, nick_name, role, password_hash, create_by)
    VALUES (${code(SMALL)}, ${1000 + (SMALL + 1) * DEPTS}, 'admin', 'Small admin', 'admin', ${await hashPassword(ADMIN_PASSWORD)}, 'bench')`;
}

export interface Seeded {
  name: string;
  url: string;
  /** Live tenants the platform admin sees. */
  tenants: number;
  /** Positioned records the platform admin sees. */
  records: number;
}

export async function createDatabase(admin: postgres.Sql, base: string, label: string, full: boolean, made: string[]): Promise<Seeded> {
  // The name is ours (prefix + hex), never input, so it is safe in the statement text.
  const name = `bench_scale_${label}_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  made.push(name);
  const url = urlOf(base, name);
  const db = openPostgres(url, { max: 2 });
  // Seeding statements run for minutes; the service's 5 s deadline is for requests.
  db.deadline.ms = 0;
  try {
    const t0 = performance.now();
    await migrate(db.sql);
    await bootstrap(db.sql, ADMIN_PASSWORD);
    await seedTenants(db.sql, full ? null : NEAR_EMPTY_TENANTS);
    await seedDepts(db.sql, [-1, ...(full ? Array.from({ length: TENANTS }, (_, i) => i) : NEAR_EMPTY_TENANTS)]);
    await seedAudit(db.sql, full ? null : NEAR_EMPTY_TENANTS);
    await seedSmallAdmin(db.sql);
    // As autovacuum would have by then: statistics, and the visibility map that index-only scans use.
    await db.sql.unsafe('VACUUM ANALYZE');
    // The seed's gigabytes go to disk now, not during the reads: the checkpoint the load set off spread its writes
    // over the next 42 s, the whole of the reads (docs/benchmark.md). Needs superuser or pg_checkpoint; without, the
    // reads go ahead.
    await db.sql.unsafe('CHECKPOINT').catch((err: Error) => console.log(`${label}: no CHECKPOINT (${err.message})`));
    return await described(db.sql, label, name, url, `seeded in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } finally {
    await db.close();
  }
}

/** A database an earlier run kept (BENCH_SCALE_KEEP=1), read again as it is: its seeding takes minutes. */
export async function keptDatabase(base: string, label: string, name: string): Promise<Seeded> {
  if (!/^bench_scale_[a-z]+_[0-9a-f]{8}$/.test(name)) throw new Error(`not a kept bench database: ${name}`);
  const url = urlOf(base, name);
  const db = openPostgres(url, { max: 1 });
  try {
    return await described(db.sql, label, name, url, 'kept from an earlier run');
  } finally {
    await db.close();
  }
}

function urlOf(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

async function described(sql: Sql, label: string, name: string, url: string, how: string): Promise<Seeded> {
  const [counts] = await sql<{ tenants: number; depts: number; records: number }[]>`
    SELECT (SELECT count(*) FROM sys_tenant WHERE del_flag = '0')::int AS tenants, (SELECT count(*) FROM sys_dept)::int AS depts,
      (SELECT count(*) FROM audit_log WHERE position IS NOT NULL)::int AS records`;
  console.log(`${label}: ${name}, ${counts!.tenants} tenants, ${counts!.depts} departments, ${counts!.records} audit records, ${how}`);
  return { name, url, tenants: counts!.tenants, records: counts!.records };
}
