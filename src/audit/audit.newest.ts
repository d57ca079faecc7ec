import type { Row } from 'postgres';
import type { Db, Tx } from '../db/database.js';
import { EXACT_TOTAL_UP_TO, totalUpTo, type PageQuery } from '../db/page.js';
import { builtOnce, plainName } from '../db/fields.js';
import { recordColumns, toAuditRecord } from './audit.fields.js';
import type { AuditRecord } from './audit.schema.js';

// The newest records of the trail, whole (audit_newest,
// sql/026_audit_newest.sql): the superadmin's unfiltered first pages and
// their count read them alone, one statement on one table, where on Citus
// audit_log's walk reached every shard (docs/scale-out.md#what-it-costs).
//
// Rule: audit_newest holds exactly the NEWEST_KEPT positioned records of
// audit_log with the highest positions (all of them while there are fewer).
// It is written only under audit_feed's row lock, by the sequencer's runs
// (positions only grow, so a run adds its records and drops what fell below
// the newest), by the retention purge (what it deletes, then the copy made
// whole again from audit_log) and by audit_time_blocks_rebuild(); so no two
// of them interleave.

/** The bound of the count and one more (db/page.ts): enough for every page that ends within the first 1,000. */
const NEWEST_KEPT = EXACT_TOTAL_UP_TO + 1;

/** audit_newest's columns: audit_log's but seq (sql/026_audit_newest.sql; a test holds the two tables alike). */
const COPIED = ['position', 'time', 'tenant_id', 'user_name', 'user_tenant_id', 'action', 'entity_type', 'entity_id', 'request_id', 'ip', 'changes'];

/** COPIED as a column list (builtOnce: the code's own names, each checked). */
const copied = (db: Db) => builtOnce(db, COPIED, 'columns', () => COPIED.map((c) => plainName(c, 'identifier')).join(', '));

/**
 * A sequencer run's part, as CTEs after `placed` (the run's numbered
 * records, every column, `RETURNING a.*`): the newest of them added, and what fell
 * below the newest NEWEST_KEPT of the table and the run together dropped.
 * Each CTE reads the table as it was before the statement, hence the union.
 */
export function keepNewest(tx: Tx) {
  return tx`
    kept AS (
      SELECT * FROM placed ORDER BY position DESC LIMIT ${NEWEST_KEPT}
    ), added AS (
      INSERT INTO audit_newest (${copied(tx)}) SELECT ${copied(tx)} FROM kept
    ), dropped AS (
      DELETE FROM audit_newest n WHERE n.position < (
        SELECT min(t.position) FROM (
          SELECT position FROM audit_newest UNION ALL SELECT position FROM kept ORDER BY position DESC LIMIT ${NEWEST_KEPT}) t)
    )`;
}

/**
 * After the purge deleted records the copy held: the newest records of
 * audit_log put back, under the purge's hold of audit_feed's row lock (no
 * run adds meanwhile). What the copy still holds is among them, so it is
 * whole again. Over every shard on Citus (transactionAcrossTenants).
 */
export async function refillNewest(tx: Tx): Promise<void> {
  await tx`
    INSERT INTO audit_newest (${copied(tx)})
    SELECT ${copied(tx)} FROM audit_log WHERE position IS NOT NULL ORDER BY position DESC LIMIT ${NEWEST_KEPT}
    ON CONFLICT (position) DO NOTHING`;
}

/** Whether a page is one of those the copy answers: it ends within the first EXACT_TOTAL_UP_TO records. */
export const withinNewest = (page: PageQuery) => page.pageNum * page.pageSize <= EXACT_TOTAL_UP_TO;

/**
 * The superadmin's unfiltered page, newest first, and the total counted to
 * the bound (db/page.ts countBound), from the copy alone: its rows number
 * min(records, NEWEST_KEPT), so the count says "more than 1,000" exactly
 * when there are.
 */
export async function newestPage(sql: Db, page: PageQuery): Promise<{ total: number; totalExact: boolean; rows: AuditRecord[] }> {
  const found = await sql<({ newestCount: number; newestKey: string | null } & Row)[]>`
    SELECT c.n AS "newestCount", r.* FROM (SELECT count(*)::int AS n FROM audit_newest) c
    LEFT JOIN LATERAL (
      SELECT a.position AS "newestKey", ${recordColumns(sql)} FROM audit_newest a
      ORDER BY a.position DESC LIMIT ${page.pageSize} OFFSET ${(page.pageNum - 1) * page.pageSize}) r ON true
    ORDER BY r."newestKey" DESC`;
  const rows = found.filter((r) => r.newestKey !== null).map(({ newestCount: _n, newestKey: _k, ...row }) => toAuditRecord(row));
  return { ...totalUpTo(found[0]!.newestCount, EXACT_TOTAL_UP_TO), rows };
}
