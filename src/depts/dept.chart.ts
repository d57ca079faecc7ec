import { createHash } from 'node:crypto';
import type { Db, Sql } from '../db/database.js';
import { listFilter } from './dept.sql.js';
import { dbText, DB_TEXT_COLUMNS, PLAIN_COLUMNS, type DbTextRow, type PlainRow } from './dept.json.js';
import { ChunkWriter, TreeRows, type ChunkPool } from './dept.chart.bytes.js';
import type { DeptListQuery } from './dept.schema.js';
import { transaction } from '../db/retry.js';

// The organisation chart (dept `list` and `tree`) as cached, pre-serialised
// envelopes. Every department write moves its tenant's version on in the same
// statement (chartBump below; sql/005_dept_chart_version.sql, made a vector of
// slots in sql/010_concurrent_writes.sql so writes do not queue on it), so a
// read costs one version lookup; the bytes of a (tenant, version, query) are
// built once, from the same snapshot as the version, and reused until evicted.
// Equal versions mean equal charts, so an ETag names exactly one chart.
//
// Here: the version and its ETag, and a chart built from one snapshot. The
// bytes are written by dept.chart.bytes.ts; the cache of built charts is
// dept.chart.cache.ts.

export type ChartKind = 'list' | 'tree';

export interface Chart {
  etag: string;
  /** The whole response body, envelope included, in chunks of up to 1 MiB (one for most charts). */
  body: Buffer[];
  bytes: number;
  /** Says the body is sent (or will not be): called once, after which its chunks may be written again (ChartCache). */
  release(): void;
}

/**
 * Rule: every statement that writes a tenant's departments moves its chart
 * version on: a CTE to place after the statement's own (it opens with a
 * comma), writing a sequence value never used before into the slot of its
 * server session, so writes of one tenant queue on each other only when
 * their slots collide, and two snapshots that read the same vector hold the
 * same departments. Triggers did this until sql/023_one_schema_for_citus.sql
 * (Citus allows none on a distributed table); a program writing sys_dept in
 * SQL must add the same (docs/operations.md).
 */
export function chartBump(db: Db, tenantId: string) {
  return db`, chart_bump AS (${chartBumpStatement(db, tenantId)})`;
}

/** chartBump as a statement of its own, for a write that runs one statement per table (createDept on Citus). */
export function chartBumpStatement(db: Db, tenantId: string) {
  return db`
    INSERT INTO dept_chart_version AS v (tenant_id, slot, version)
    VALUES (${tenantId}, pg_backend_pid() % 64, nextval('dept_chart_version_seq'))
    ON CONFLICT (tenant_id, slot) DO UPDATE SET version = excluded.version`;
}

/**
 * The tenant's current chart version: its slots' values (each a sequence
 * value written by the last write through that slot), as one text; "0"
 * until its departments are first written.
 */
export async function chartVersion(sql: Db, tenantId: string): Promise<string> {
  const [row] = await sql<{ version: string | null }[]>`
    SELECT string_agg(slot || ':' || version, ',' ORDER BY slot) AS version FROM dept_chart_version WHERE tenant_id = ${tenantId}`;
  return row?.version ?? '0';
}

/** A stable text for the filters, in one order, so equal queries share one entry. */
export function queryKey(kind: ChartKind, query: DeptListQuery): string {
  return kind === 'tree' ? 'tree' : `list:${JSON.stringify([query.deptName ?? null, query.status ?? null, query.parentId ?? null])}`;
}

export function chartEtag(tenantId: string, version: string, kind: ChartKind, query: DeptListQuery): string {
  const hash = createHash('sha1')
    .update(`${tenantId}\0${queryKey(kind, query)}\0${version}`)
    .digest('base64url')
    .slice(0, 22);
  return `"dc-${hash}"`;
}

const ENVELOPE_HEAD = '{"code":200,"msg":"success","data":[';
const ENVELOPE_TAIL = ']}';
/** Rows are fetched and written out in batches: a big tenant's rows are never all in memory at once. */
const BATCH = 2_000;

/** The filtered rows in list order: (parentId, orderNum, deptId). */
function listRows(tx: Db, tenantId: string, query: DeptListQuery) {
  return tx<DbTextRow[]>`
    SELECT ${DB_TEXT_COLUMNS(tx)} FROM sys_dept WHERE ${listFilter(tx, tenantId, query)}
    ORDER BY parent_id, order_num, dept_id`;
}

/**
 * Every live department, in no order: one sequential read, no sort and no
 * JSON built in the database (TreeRows orders and nests them, plainText
 * writes them: both cheaper here than in SQL, and in embedded mode neither
 * grows the database's memory, which never shrinks).
 */
function treeRows(tx: Db, tenantId: string) {
  return tx<PlainRow[]>`SELECT ${PLAIN_COLUMNS(tx)} FROM sys_dept WHERE ${listFilter(tx, tenantId, {})}`;
}

/**
 * Reads the version and the rows in one REPEATABLE READ snapshot, so the
 * bytes are never labelled with a version they do not belong to, and writes
 * the envelope. `list` is written in row order as the rows come. `tree` reads
 * the same rows in one sequential scan (no recursive walk, no sort in the
 * database), keeps them as bytes, then orders and writes them nested.
 */
export async function buildChart(
  sql: Sql,
  tenantId: string,
  kind: ChartKind,
  query: DeptListQuery,
  pool?: ChunkPool,
): Promise<{ version: string; body: Buffer[]; bytes: number }> {
  return transaction(
    sql,
    async (tx) => {
      const version = await chartVersion(tx, tenantId);
      const out = new ChunkWriter(pool);
      out.write(ENVELOPE_HEAD);
      if (kind === 'list') {
        let first = true;
        await listRows(tx, tenantId, query).cursor(BATCH, (rows) => {
          for (const r of rows) {
            out.write(first ? `${dbText(r)}}` : `,${dbText(r)}}`);
            first = false;
          }
        });
      } else {
        const rows = new TreeRows(pool);
        await treeRows(tx, tenantId).cursor(BATCH, (batch) => {
          for (const r of batch) rows.add(r);
        });
        rows.writeTo(out);
      }
      out.write(ENVELOPE_TAIL);
      const bytes = out.bytes;
      return { version, body: out.finish(), bytes };
    },
    'isolation level repeatable read read only',
  );
}
