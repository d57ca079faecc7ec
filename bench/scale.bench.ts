// `npm run bench -- scale`: reads across tenants on a big database beside the
// same reads on a near-empty one, in the same run. Two fresh databases on
// DATABASE_URL's server (PostgreSQL only; both dropped at the end):
//
//   scale:      BENCH_SCALE_TENANTS (10,000) tenants in a three-level
//               hierarchy, BENCH_SCALE_DEPTS (1,000) departments each, and
//               BENCH_SCALE_AUDIT (1,000,000) positioned audit records spread
//               over them;
//   near-empty: the same schema, the platform tenant, and the same small
//               tenant (with the 9 tenants below it, its admin, departments
//               and audit records, at the same ids and positions); nothing else.
//
// The built service (scripts/start.sh, as npm start runs it) runs against each, and every read is
// timed over HTTP for a small tenant's admin and for the platform admin, in
// interleaved rounds so drift on the machine hits both databases alike.
// Prints mean, p50 and p99 per database and the ratio; asserts only
// correctness (statuses, page sizes, the records a catch-up delivers).
// BENCH_SHORT=1: 200 tenants x 50 departments and 20,000 records, few rounds.

import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { bootstrap } from '../src/bootstrap.js';
import { openPostgres, type Sql } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { hashPassword } from '../src/auth/password.js';
import { startService, stopAll, waitReady } from './load.bench.js';

const SHORT = process.env.BENCH_SHORT === '1';
const TENANTS = Number(process.env.BENCH_SCALE_TENANTS ?? (SHORT ? 200 : 10_000));
const DEPTS = Number(process.env.BENCH_SCALE_DEPTS ?? (SHORT ? 50 : 1_000));
const AUDIT = Number(process.env.BENCH_SCALE_AUDIT ?? (SHORT ? 20_000 : 1_000_000));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (SHORT ? 2 : 6));
const PER_ROUND = Number(process.env.BENCH_REQUESTS ?? (SHORT ? 5 : 20));
const PASSWORD = 'bench-password-1';

/** Tenant number i (0-based) has the code 100000 + i. The small tenant is number 10: level two, with 9 tenants below it. */
const code = (i: number) => String(100_000 + i);
const SMALL = 10;
const SMALL_SUBTREE = [SMALL, ...Array.from({ length: 9 }, (_, k) => SMALL + 1 + k)];
/** The near-empty database holds the small tenant, its parent (tenant 0, level one) and its children. */
const NEAR_EMPTY_TENANTS = [0, ...SMALL_SUBTREE];

// ---------------------------------------------------------------- seeding (set-based)

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
  // A bulk load as sql/014_audit_time_blocks.sql says to do one: the time blocks widened once at the end, not per record.
  await sql`ALTER TABLE audit_log DISABLE TRIGGER audit_time_blocks_inserted`;
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
  await sql`ALTER TABLE audit_log ENABLE TRIGGER audit_time_blocks_inserted`;
  await sql`SELECT audit_time_blocks_rebuild()`;
  await sql`UPDATE audit_feed SET last_position = ${AUDIT} WHERE id = 1`;
}

/** The small tenant's admin, who signs in. */
async function seedSmallAdmin(sql: Sql): Promise<void> {
  await sql`
    INSERT INTO sys_user (tenant_id, dept_id, user_name, nick_name, role, password_hash, create_by)
    VALUES (${code(SMALL)}, ${1000 + (SMALL + 1) * DEPTS}, 'admin', 'Small admin', 'admin', ${await hashPassword(PASSWORD)}, 'bench')`;
}

interface Seeded {
  name: string;
  url: string;
  /** Live tenants the platform admin sees. */
  tenants: number;
  /** Positioned records the platform admin sees. */
  records: number;
}

async function createDatabase(admin: postgres.Sql, base: string, label: string, full: boolean, made: string[]): Promise<Seeded> {
  // The name is ours (prefix + hex), never input, so it is safe in the statement text.
  const name = `bench_scale_${label}_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  made.push(name);
  const url = new URL(base);
  url.pathname = `/${name}`;
  const db = openPostgres(url.toString(), { max: 2 });
  // Seeding statements run for minutes; the service's 5 s deadline is for requests.
  db.deadline.ms = 0;
  try {
    const t0 = performance.now();
    await migrate(db.sql);
    await bootstrap(db.sql, PASSWORD);
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
    const [counts] = await db.sql<{ tenants: number; depts: number; records: number }[]>`
      SELECT (SELECT count(*) FROM sys_tenant WHERE del_flag = '0')::int AS tenants, (SELECT count(*) FROM sys_dept)::int AS depts,
        (SELECT count(*) FROM audit_log WHERE position IS NOT NULL)::int AS records`;
    console.log(
      `${label}: ${name}, ${counts!.tenants} tenants, ${counts!.depts} departments, ${counts!.records} audit records, seeded in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );
    return { name, url: url.toString(), tenants: counts!.tenants, records: counts!.records };
  } finally {
    await db.close();
  }
}

// ---------------------------------------------------------------- HTTP

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

interface Target {
  port: number;
  db: Seeded;
}

async function call(target: Target, method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: object) {
  const res = await fetch(`http://127.0.0.1:${target.port}${path}`, {
    method,
    headers: body ? { ...headers, 'content-type': 'application/json' } : headers,
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path} on ${target.db.name}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as { code: number; data: unknown };
}

async function login(target: Target, tenantId: string): Promise<Record<string, string>> {
  const { data } = await call(target, 'POST', '/auth/login', {}, { tenantId, username: 'admin', password: PASSWORD });
  return { authorization: `Bearer ${(data as { access_token: string }).access_token}` };
}

/** Opens the audit stream after `after` and reads until `count` records have arrived; returns their ids. */
async function catchUp(target: Target, headers: Record<string, string>, after: string, count: number): Promise<string[]> {
  const abort = new AbortController();
  const res = await fetch(`http://127.0.0.1:${target.port}/system/audit-api/stream`, {
    headers: { ...headers, 'last-event-id': after },
    signal: abort.signal,
  });
  if (res.status !== 200) throw new Error(`stream on ${target.db.name}: ${res.status}`);
  const ids: string[] = [];
  const decoder = new TextDecoder();
  let text = '';
  const timer = setTimeout(() => abort.abort(), 60_000);
  try {
    for await (const chunk of res.body!) {
      text += decoder.decode(chunk as Uint8Array, { stream: true });
      let end: number;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const id = /^id: (\d+)$/m.exec(text.slice(0, end))?.[1];
        if (id) ids.push(id);
        text = text.slice(end + 2);
      }
      if (ids.length >= count) break;
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  if (ids.length < count) throw new Error(`stream on ${target.db.name}: ${ids.length} of ${count} records`);
  return ids;
}

// ---------------------------------------------------------------- measuring

const stats = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  return { mean: xs.reduce((a, b) => a + b, 0) / xs.length, p50: at(0.5), p99: at(0.99) };
};

interface Read {
  label: string;
  /** Runs the read once against `which`; throws on a wrong answer. */
  run(which: 'scale' | 'empty'): Promise<void>;
}

export async function scale(): Promise<void> {
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error('npm run bench -- scale needs DATABASE_URL (PostgreSQL)');
  console.log(
    `sizes: ${TENANTS} tenants x ${DEPTS} departments, ${AUDIT} audit records; ${ROUNDS} rounds of ${PER_ROUND} requests per read and database`,
  );
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  const made: string[] = [];
  try {
    const empty = await createDatabase(admin, base, 'empty', false, made);
    const big = await createDatabase(admin, base, 'scale', true, made);
    const jwt = randomBytes(32).toString('hex');
    const targets = { scale: { port: await freePort(), db: big }, empty: { port: await freePort(), db: empty } };
    const scaleProc = startService('scale', [], targets.scale.port, { DATABASE_URL: big.url, JWT_SECRET: jwt });
    const emptyProc = startService('near-empty', [], targets.empty.port, {
      DATABASE_URL: empty.url,
      JWT_SECRET: jwt,
    });
    await Promise.all([waitReady(scaleProc, '/readyz'), waitReady(emptyProc, '/readyz')]);

    const callers = {
      small: { tenantId: code(SMALL), pageSize: 3, tenants: SMALL_SUBTREE.length },
      platform: { tenantId: '000000', pageSize: 10, tenants: 0 },
    };
    const reads: Read[] = [];
    for (const [who, caller] of Object.entries(callers)) {
      const headers = { scale: await login(targets.scale, caller.tenantId), empty: await login(targets.empty, caller.tenantId) };
      const tenantTotal = (which: 'scale' | 'empty') => (who === 'small' ? caller.tenants : targets[which].db.tenants);
      const get = (label: string, path: (which: 'scale' | 'empty') => string, check: (data: never, which: 'scale' | 'empty') => void) =>
        reads.push({
          label: `${who.padEnd(8)} ${label}`,
          async run(which) {
            const { code: status, data } = await call(targets[which], 'GET', path(which), headers[which]);
            if (status !== 200) throw new Error(`${label}: code ${status}`);
            check(data as never, which);
          },
        });
      const pageRows = (total: number, pageNum: number) => Math.max(0, Math.min(caller.pageSize, total - (pageNum - 1) * caller.pageSize));
      const lastPage = (total: number) => Math.max(1, Math.ceil(total / caller.pageSize));
      for (const [name, pageOf] of [
        ['first', () => 1],
        ['middle', (total: number) => Math.ceil(lastPage(total) / 2)],
        ['last', lastPage],
      ] as const) {
        get(
          `tenant list, ${name} page`,
          (which) => `/system/tenant-api/list?pageSize=${caller.pageSize}&pageNum=${pageOf(tenantTotal(which))}`,
          (data: { rows: unknown[] }, which) => {
            const want = pageRows(tenantTotal(which), pageOf(tenantTotal(which)));
            if (data.rows.length !== want) throw new Error(`tenant list ${name} page: ${data.rows.length} rows, expected ${want}`);
          },
        );
      }
      // The last page again, by cursor: after the last id of the page before it (docs/api-rules.md#paging).
      const cursorOf = async (which: 'scale' | 'empty') => {
        const before = lastPage(tenantTotal(which)) - 1;
        if (before < 1) return '0';
        const path = `/system/tenant-api/list?pageSize=${caller.pageSize}&pageNum=${before}`;
        return ((await call(targets[which], 'GET', path, headers[which])).data as { rows: { id: string }[] }).rows.at(-1)!.id;
      };
      const lastCursor = { scale: await cursorOf('scale'), empty: await cursorOf('empty') };
      get(
        'tenant list, last page by cursor',
        (which) => `/system/tenant-api/list?pageSize=${caller.pageSize}&after=${lastCursor[which]}`,
        (data: { rows: unknown[] }, which) => {
          const want = pageRows(tenantTotal(which), lastPage(tenantTotal(which)));
          if (data.rows.length !== want) throw new Error(`tenant list by cursor: ${data.rows.length} rows, expected ${want}`);
        },
      );
      // Names of the small tenant's subtree: "Tenant 1" matches tenants 1, 10-19, 100-199, 1000-1999...
      get(
        'tenant list, name filter',
        () => `/system/tenant-api/list?pageSize=${caller.pageSize}&tenantName=${encodeURIComponent('Tenant 1')}`,
        (data: { rows: { tenantName: string }[] }) => {
          if (data.rows.length !== caller.pageSize || data.rows.some((r) => !r.tenantName.includes('Tenant 1')))
            throw new Error(`tenant list by name: ${data.rows.length} rows`);
        },
      );
      get(
        'tenant list, rare name',
        () => `/system/tenant-api/list?pageSize=${caller.pageSize}&tenantName=${encodeURIComponent(`Tenant ${SMALL + 5}.`)}`,
        (data: { rows: unknown[]; total: number }) => {
          if (data.rows.length !== 1 || data.total !== 1) throw new Error(`tenant list by a rare name: ${data.rows.length} rows`);
        },
      );
      const audit = (label: string, query: string, atLeast = 1) =>
        get(
          `audit list, ${label}`,
          () => `/system/audit-api/list?pageSize=10${query}`,
          (data: { rows: unknown[] }) => {
            if (data.rows.length < Math.min(atLeast, 10)) throw new Error(`audit list ${label}: ${data.rows.length} rows`);
          },
        );
      const day = new Date(Date.now() - 3 * 86_400_000);
      const ymd = `${day.getFullYear()}-${String(day.getMonth() + 1).padStart(2, '0')}-${String(day.getDate()).padStart(2, '0')}`;
      audit('first page', '', 10);
      audit('page 5', '&pageNum=5', 10);
      audit('action', '&action=dept.update', 10);
      audit('entityType', '&entityType=user', 10);
      const [sample] = (
        (await call(targets.empty, 'GET', `/system/audit-api/list?pageSize=1&action=dept.update&tenantId=${code(SMALL)}`, headers.empty)).data as {
          rows: { entityId: string }[];
        }
      ).rows;
      audit('entityId', `&entityId=${sample!.entityId}`);
      audit('userName', '&userName=ops', 10);
      audit('tenantId', `&tenantId=${code(SMALL)}`, 10);
      audit('beginTime+endTime', `&beginTime=${ymd}&endTime=${ymd}`, 1);
      // The change feed far from the start: the last tenth of the log.
      const after = Math.floor(AUDIT * 0.9);
      get(
        `change feed after ${after}`,
        () => `/system/audit-api/changes?limit=100&after=${after}`,
        (data: { events: { id: string }[] }) => {
          if (data.events.length === 0 || Number(data.events[0]!.id) <= after) throw new Error('change feed: no records after the cursor');
        },
      );
      // Catch-up: the stream from a cursor to the records logged since. The small admin sees the same
      // records in both databases; the platform admin is given a cursor with the same number after it.
      const backlog = Math.min(200, empty.records);
      const cursor = async (which: 'scale' | 'empty') => {
        if (who === 'small') return String(after);
        const page = (await call(targets[which], 'GET', `/system/audit-api/list?pageSize=1&pageNum=${backlog + 1}`, headers[which])).data as {
          rows: { id: string }[];
        };
        return page.rows[0]!.id;
      };
      const cursors = { scale: await cursor('scale'), empty: await cursor('empty') };
      const expected = {
        scale: (await call(targets.scale, 'GET', `/system/audit-api/changes?limit=1000&after=${cursors.scale}`, headers.scale)).data as {
          events: unknown[];
        },
        empty: (await call(targets.empty, 'GET', `/system/audit-api/changes?limit=1000&after=${cursors.empty}`, headers.empty)).data as {
          events: unknown[];
        },
      };
      reads.push({
        label: `${who.padEnd(8)} stream catch-up`,
        async run(which) {
          await catchUp(targets[which], headers[which], cursors[which], expected[which].events.length);
        },
      });
      reads.push({
        label: `${who.padEnd(8)} login`,
        async run(which) {
          await login(targets[which], caller.tenantId);
        },
      });
      const dept = 1000 + ((who === 'small' ? SMALL : -1) + 1) * DEPTS + 5;
      get(
        'dept by id',
        () => `/system/dept-api/${dept}`,
        (data: { deptId: number }) => {
          if (data.deptId !== dept) throw new Error(`dept ${dept}: got ${data.deptId}`);
        },
      );
      get(
        'dept tree',
        () => '/system/dept-api/tree',
        (data: unknown[]) => {
          if (data.length < 1) throw new Error('dept tree: no roots');
        },
      );
    }

    console.log(`${'read'.padEnd(44)} ${'scale mean / p50 / p99 ms'.padEnd(28)} ${'near-empty mean / p50 / p99 ms'.padEnd(31)} ratio (mean, p50)`);
    for (const read of reads) {
      const samples = { scale: [] as number[], empty: [] as number[] };
      // Warm-up, not counted: JIT, caches and the chart cache see the read before the rounds.
      for (let i = 0; i < 3; i++) for (const which of ['scale', 'empty'] as const) await read.run(which);
      for (let round = 0; round < ROUNDS; round++) {
        for (const which of round % 2 === 0 ? (['scale', 'empty'] as const) : (['empty', 'scale'] as const)) {
          for (let i = 0; i < PER_ROUND; i++) {
            const t = performance.now();
            await read.run(which);
            samples[which].push(performance.now() - t);
          }
        }
      }
      const s = stats(samples.scale);
      const e = stats(samples.empty);
      const f = (x: { mean: number; p50: number; p99: number }) => `${x.mean.toFixed(1)} / ${x.p50.toFixed(1)} / ${x.p99.toFixed(1)}`;
      console.log(`${read.label.padEnd(44)} ${f(s).padEnd(28)} ${f(e).padEnd(31)} ${(s.mean / e.mean).toFixed(2)}x, ${(s.p50 / e.p50).toFixed(2)}x`);
    }
  } finally {
    await stopAll();
    if (process.env.BENCH_SCALE_KEEP === '1') console.log(`kept: ${made.join(', ')}`);
    else for (const name of made) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}
