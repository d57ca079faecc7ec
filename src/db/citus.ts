import type { Db, Sql, Tx } from './database.js';
import { LOCK } from './locks.js';

// Running on a Citus cluster (docs/scale-out.md). The service knows it is on
// Citus by the `citus` extension in its database; nothing is configured.
// Then its own start places every table: the tenant-owned ones distributed
// by tenant_id, all in one colocation group (the rows of one tenant on one
// server, so the joins between them stay there), and the platform's tables
// as reference tables (a copy on every server). A statement that names one
// tenant then goes whole to the server holding it (a router query); the few
// that cross tenants by design say so (acrossTenants below), and any other
// that would reach every shard is refused by Citus itself
// (`citus.multi_task_query_log_level = error` on every connection, set by
// openPostgres).

/**
 * Tables with one row set per tenant, tenant_id leading their keys:
 * distributed by tenant_id, colocated with the first. Parents before the
 * tables whose foreign keys point at them.
 */
export const DISTRIBUTED_TABLES = [
  'sys_dept',
  'sys_user',
  'auth_session',
  'login_lock',
  'dept_chart_version',
  'audit_log',
  'sys_api_key',
  'webhook_endpoint',
  'webhook_delivery',
  'sso_connection',
  'sso_link',
  'sso_attempt',
  'sso_code',
  'sso_policy',
  'quota_usage',
  'quota_consumption',
  'quota_idempotency',
  'ruoyi_import_row',
] as const;

/**
 * The platform's tables, small or global and read by every server: reference
 * tables. Before the distributed ones, whose foreign keys point at sys_tenant.
 * schema_migrations stays the coordinator's own.
 */
export const REFERENCE_TABLES = [
  'sys_package',
  'sys_tenant',
  'sys_tenant_name_gram',
  'sys_tenant_list_version',
  'app_setting',
  'audit_feed',
  'audit_time_block',
  'audit_newest',
] as const;

/**
 * The settings a connection on Citus starts with. The level at which a
 * statement that would run on several shards fails. And no JIT: Citus
 * estimates the intermediate results of a statement's CTEs at many rows, so
 * PostgreSQL compiled the plan of a quota consume (one statement outside a
 * transaction, where transaction()'s own `jit off` does not reach) for
 * 600 ms that then ran in 40 ms, while it held the counter's row: 25
 * concurrent consumes of one counter ran past the statement deadline.
 * And one connection per worker for a statement over several shards: the
 * service's are many small ones (the sequencer's check, a superadmin's
 * page), run by many requests at once; Citus's default opened more
 * connections to each worker for each of them (and closed them after, past
 * the one it caches), which under 16 concurrent callers cut such statements
 * to a third of what one connection each ran (docs/scale-out.md#what-it-costs).
 */
export const ROUTER_ONLY = { 'citus.multi_task_query_log_level': 'error', jit: 'off', 'citus.max_adaptive_executor_pool_size': '1' } as const;

/** Whether this database is a Citus coordinator's (its `citus` extension is installed). */
export async function isCitus(sql: Db): Promise<boolean> {
  const [row] = await sql<{ citus: boolean }[]>`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus`;
  return row!.citus;
}

/**
 * Places every table not placed yet, one at a time, under the migrations'
 * lock so that nodes starting together take turns; answers the tables it
 * placed. Runs after every start's migrations: a table a later migration
 * adds is placed by the start that ran it. A table placed already (by this
 * start, an earlier one or an operator) is left as it is.
 */
export async function distributeSchema(sql: Sql): Promise<string[]> {
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCK.migrations}, 0)`;
    // Shards are made and filled one table at a time on one connection per worker, so the step works inside this transaction.
    await tx`SET LOCAL citus.multi_shard_modify_mode TO 'sequential'`;
    const placed = new Set((await tx<{ name: string }[]>`SELECT logicalrelid::regclass::text AS name FROM pg_dist_partition`).map((r) => r.name));
    const unplaced = [...REFERENCE_TABLES, ...DISTRIBUTED_TABLES].filter((t) => !placed.has(t));
    if (unplaced.length === 0) return [];
    // A foreign key from a table Citus does not know yet to a reference table makes Citus add that table to
    // its metadata as a "local table" first, which it refuses for a table with an identity column and which
    // cannot then be colocated. So the foreign keys to the reference tables-to-be are dropped, every table
    // placed, and the keys made again as they were.
    const keys = await tx<{ table: string; name: string; definition: string }[]>`
      SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS definition
      FROM pg_constraint
      WHERE contype = 'f' AND confrelid::regclass::text = ANY (${[...REFERENCE_TABLES]}::text[])
        AND conrelid::regclass::text = ANY (${unplaced}::text[])
      ORDER BY conrelid, conname`;
    for (const key of keys) await tx`ALTER TABLE ${tx(key.table)} DROP CONSTRAINT ${tx(key.name)}`;
    const done: string[] = [];
    for (const table of REFERENCE_TABLES) {
      if (placed.has(table)) continue;
      await tx`SELECT create_reference_table(${table})`;
      done.push(table);
    }
    const [first, ...rest] = DISTRIBUTED_TABLES;
    for (const table of [first, ...rest]) {
      if (placed.has(table)) continue;
      await (table === first
        ? tx`SELECT create_distributed_table(${table}, 'tenant_id', colocate_with => 'none')`
        : tx`SELECT create_distributed_table(${table}, 'tenant_id', colocate_with => ${first})`);
      done.push(table);
    }
    // The definition is the server's own text for the key it had (pg_get_constraintdef), never input.
    for (const key of keys) await tx.unsafe(`ALTER TABLE ${quoted(key.table)} ADD CONSTRAINT ${quoted(key.name)} ${key.definition}`);
    return done;
  }) as Promise<string[]>;
}

/** A catalog name as an SQL identifier. */
const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Whether the running process talks to a Citus cluster: set once at start (main.ts, the test apps). */
let onCitus = false;
export function setCitus(value: boolean): void {
  onCitus = value;
}
export const isOnCitus = (): boolean => onCitus;

/**
 * Runs `work`, a statement (or a few) that crosses tenants by design and is
 * named in docs/scale-out.md#across-tenants-by-design, with the multi-shard
 * refusal lowered for it alone. On plain PostgreSQL and the embedded
 * database it runs as it is. On Citus, inside a transaction (`db` a Tx) the
 * level goes back to `error` once `work` is done; outside one, `work` runs in
 * a transaction of its own, whose SET LOCAL ends with it.
 */
export async function acrossTenants<T>(db: Db, work: (db: Db) => Promise<T>): Promise<T> {
  if (!onCitus) return work(db);
  if ('savepoint' in db) {
    const tx = db as Tx;
    await tx`SELECT set_config('citus.multi_task_query_log_level', 'off', true)`;
    const result = await work(tx);
    await tx`SELECT set_config('citus.multi_task_query_log_level', 'error', true)`;
    return result;
  }
  return (db as Sql).begin(async (tx) => {
    await tx`SELECT set_config('citus.multi_task_query_log_level', 'off', true)`;
    return work(tx);
  }) as Promise<T>;
}

/**
 * A transaction for work that crosses tenants by design (the audit
 * sequencer), with the multi-shard refusal lowered for the whole of it on
 * Citus; a plain transaction elsewhere.
 */
export async function transactionAcrossTenants<T>(sql: Sql, work: (tx: Tx) => Promise<T>): Promise<T> {
  return sql.begin(async (tx) => {
    if (onCitus) await tx`SELECT set_config('citus.multi_task_query_log_level', 'off', true)`;
    return work(tx);
  }) as Promise<T>;
}

/**
 * On Citus, a write of a reference table (a tenant, a package) runs on every
 * server, each server's copy locked in its own order: two writes that meet
 * on a row or a unique key (two creates of one companyName) lock the copies
 * in different orders and Citus ends one as a deadlock, which under many
 * racing writes outlasts the retries. So there they go one at a time, under
 * an advisory lock of the coordinator, which every service node talks to.
 * Such writes are rare (an admin's, not a request's hot path); on one
 * PostgreSQL their row locks already order them.
 */
export async function serializePlatformWrites(tx: Tx): Promise<void> {
  if (onCitus) await tx`SELECT pg_advisory_xact_lock(${LOCK.platformWrites}, 0)`;
}
