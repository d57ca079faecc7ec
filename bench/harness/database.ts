// The database a process bench runs on, migrated, bootstrapped and seeded
// once before the service and the baseline start:
//
// DATABASE_URL set: a fresh database on that server (dropped afterwards);
// unset: an embedded PGlite data directory (the baseline gets a copy of it).
// BENCH_POOLER_URL (with DATABASE_URL): both processes reach the database through
// that pooler (PgBouncer in transaction mode, fronting DATABASE_URL's server);
// the service keeps DATABASE_DIRECT_URL for LISTEN and migrations.
// BENCH_DB_PREPARE=false: both processes without named prepared statements
// (DB_PREPARE=false); required through PgBouncer 1.18.
// The in-process benches (inprocess.ts) take their fresh database from
// createDatabase too.

import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { bootstrap } from '../../src/bootstrap.js';
import { openEmbedded, openPostgres, type Sql } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { cleanupOnInterrupt } from './processes.js';

/** The platform admin's password in every bench database. */
export const ADMIN_PASSWORD = 'bench-password-1';

/**
 * A BEFORE INSERT trigger on `audit_log` that drops every record before it is
 * stored, enabled as created (`ALTER TABLE audit_log DISABLE|ENABLE TRIGGER
 * bench_audit_dropped` switches it): what the audit record costs a write is
 * the difference (docs/benchmark.md).
 */
export async function addAuditDropTrigger(sql: Sql): Promise<void> {
  await sql`CREATE FUNCTION bench_audit_dropped() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`;
  await sql`CREATE TRIGGER bench_audit_dropped BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION bench_audit_dropped()`;
}

/**
 * The same for the chart version (dept_chart_version): a department write's
 * bump of it is dropped before it is stored, so what the version costs the
 * service's writes is the difference. The bare create writes none.
 */
export async function addChartDropTrigger(sql: Sql): Promise<void> {
  await sql`CREATE FUNCTION bench_chart_dropped() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`;
  await sql`CREATE TRIGGER bench_chart_dropped BEFORE INSERT OR UPDATE ON dept_chart_version FOR EACH ROW EXECUTE FUNCTION bench_chart_dropped()`;
}

export interface Prepared<W = undefined> {
  description: string;
  serviceEnv: Record<string, string>;
  baselineEnv: Record<string, string>;
  /** Ids the runs use: a department to read, the root of the big subtree and a move target. */
  ids: { leaf: number; big: number; target: number };
  /** What the mode's own seed returned (writes: each side's rows). */
  extra: W;
  cleanup(): Promise<void>;
}

/**
 * Departments of the platform tenant: `Bench` with k children and k*(k-1)
 * grandchildren (about `size` in all), varied enough to exercise escaping
 * and nulls; and an empty `Target` to move it under.
 */
export async function seed(sql: Sql, size: number): Promise<Prepared['ids']> {
  const [{ bench }] = (await sql<{ bench: number }[]>`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, create_by)
    SELECT '000000', dept_id, '0,' || dept_id, 'Bench', 'bench' FROM sys_dept WHERE tenant_id = '000000' AND parent_id = 0
    RETURNING dept_id AS bench`) as unknown as [{ bench: number }];
  const [{ target }] = (await sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, create_by)
    VALUES ('000000', 0, '0', 'Target', 'bench') RETURNING dept_id AS target`) as unknown as [{ target: number }];
  const k = Math.max(2, Math.ceil(Math.sqrt(size)));
  const [benchRow] = await sql<{ ancestors: string }[]>`SELECT ancestors FROM sys_dept WHERE tenant_id = '000000' AND dept_id = ${bench}`;
  await sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, order_num, leader, phone, email, create_by)
    SELECT '000000', ${bench}, ${`${benchRow!.ancestors},${bench}`}, 'Division "' || g || '" é', g % 7,
           CASE WHEN g % 2 = 0 THEN 'Lead ' || g END, CASE WHEN g % 3 = 0 THEN '+86 138 ' || g END,
           CASE WHEN g % 5 = 0 THEN 'd' || g || '@example.com' END, 'bench'
    FROM generate_series(1, ${k}) g`;
  await sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, order_num, leader, create_by)
    SELECT '000000', c.dept_id, c.ancestors || ',' || c.dept_id, 'Team ' || g, g % 11, 'Lead\\' || g, 'bench'
    FROM sys_dept c, generate_series(1, ${Math.max(0, Math.ceil(size / k) - 1)}) g
    WHERE c.tenant_id = '000000' AND c.parent_id = ${bench}`;
  await sql`ANALYZE sys_dept`;
  const [leaf] = await sql<{ id: number }[]>`SELECT max(dept_id) AS id FROM sys_dept WHERE tenant_id = '000000'`;
  return { leaf: leaf!.id, big: bench, target };
}

/** A fresh database with about `size` departments (and what `seedMore` adds), and each process's environment to reach it. */
export async function prepare<W = undefined>(size: number, jwtSecret: string, seedMore?: (sql: Sql) => Promise<W>): Promise<Prepared<W>> {
  const made = await create(size, jwtSecret, seedMore);
  // Once: by the mode when it ends, or on an interrupt, whichever comes first.
  let dropped: Promise<void> | undefined;
  const prepared = { ...made, cleanup: () => (dropped ??= made.cleanup()) };
  cleanupOnInterrupt(prepared.cleanup);
  return prepared;
}

export interface CreatedDatabase {
  name: string;
  /** The server's URL with this database's name. */
  url: string;
  /** Drops the database (ending its sessions); once, however often it is called. */
  drop(): Promise<void>;
}

/** A new, empty database on the PostgreSQL server at `serverUrl`, named `prefix` and random hex. */
export async function createDatabase(serverUrl: string, prefix: string): Promise<CreatedDatabase> {
  // The name is ours (prefix + hex), never input, so it is safe in the statement text.
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  const drop = async () => {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  };
  return { name, url: url.toString(), drop: () => (dropped ??= drop()) };
}

async function create<W>(size: number, jwtSecret: string, seedMore?: (sql: Sql) => Promise<W>): Promise<Prepared<W>> {
  const common = { ADMIN_PASSWORD, JWT_SECRET: jwtSecret };
  const url = process.env.DATABASE_URL;
  if (url) {
    const created = await createDatabase(url, 'bench');
    const db = openPostgres(created.url, { max: 2 });
    await migrate(db.sql);
    await bootstrap(db.sql, ADMIN_PASSWORD);
    const ids = await seed(db.sql, size);
    const extra = (await seedMore?.(db.sql)) as W;
    await db.close();
    const direct = created.url;
    const pooler = process.env.BENCH_POOLER_URL ? new URL(process.env.BENCH_POOLER_URL) : undefined;
    if (pooler) pooler.pathname = `/${created.name}`;
    const connection = {
      DATABASE_URL: pooler?.toString() ?? direct,
      DB_PREPARE: process.env.BENCH_DB_PREPARE === 'false' ? 'false' : 'true',
    };
    return {
      description: `PostgreSQL at ${new URL(direct).host} (fresh database ${created.name})${pooler ? `, through the pooler at ${pooler.host}` : ''}, DB_PREPARE=${connection.DB_PREPARE}`,
      serviceEnv: { ...common, ...connection, ...(pooler ? { DATABASE_DIRECT_URL: direct } : {}) },
      baselineEnv: { ...common, ...connection },
      ids,
      extra,
      cleanup: created.drop,
    };
  }
  const dir = await mkdtemp(join(tmpdir(), 'bench-pglite-'));
  const db = await openEmbedded(join(dir, 'service'));
  await migrate(db.sql);
  await bootstrap(db.sql, ADMIN_PASSWORD);
  const ids = await seed(db.sql, size);
  const extra = (await seedMore?.(db.sql)) as W;
  await db.close();
  await cp(join(dir, 'service'), join(dir, 'baseline'), { recursive: true });
  const env = { ...common, DATABASE_URL: '' };
  return {
    description: 'embedded PGlite (the baseline runs its own copy of the data directory)',
    serviceEnv: { ...env, DATA_DIR: join(dir, 'service') },
    baselineEnv: { ...env, DATA_DIR: join(dir, 'baseline') },
    ids,
    extra,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
