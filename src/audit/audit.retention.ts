import type { Sql } from '../db/database.js';
import { acrossTenants, isOnCitus, transactionAcrossTenants } from '../db/citus.js';
import { BLOCK } from './audit.sql.js';
import { refillNewest } from './audit.newest.js';

// The audit trail's retention (docs/operations.md): records older than the
// retention period are deleted, with what is kept beside them.

/**
 * Deletes records older than `days`, `batch` rows per statement so no lock
 * or transaction is held for long. Writers never wait for it: they insert
 * new rows, and the sequencer touches only unpositioned ones. Then the time
 * window's position blocks left empty go too. Returns the number of records
 * deleted.
 */
export async function purgeAudit(sql: Sql, days: number, batch = 1000): Promise<number> {
  let total = 0;
  for (;;) {
    // Every tenant's records, by age (docs/scale-out.md#across-tenants-by-design). On Citus, whose statements
    // over several shards take no row locks in a subquery, two nodes' purges may wait for each other's rows.
    // Under audit_feed's row lock, the lock of every write of the copy of the newest records (audit.newest.ts):
    // the records it held go from it in the same statement, and it is made whole again from what is left.
    const deleted = await transactionAcrossTenants(sql, async (tx) => {
      await tx`SELECT 1 FROM audit_feed WHERE id = 1 FOR UPDATE`;
      const [gone] = await tx<{ n: number; copies: number }[]>`
        WITH gone AS (
          DELETE FROM audit_log WHERE (tenant_id, seq) IN (
            SELECT tenant_id, seq FROM audit_log
            WHERE time < now() - make_interval(days => ${days}) AND position IS NOT NULL
            ORDER BY time LIMIT ${batch}
            ${isOnCitus() ? tx`` : tx`FOR UPDATE SKIP LOCKED`})
          RETURNING position
        ), copies AS (
          DELETE FROM audit_newest n WHERE n.position IN (SELECT position FROM gone) RETURNING 1
        )
        SELECT (SELECT count(*)::int FROM gone) AS n, (SELECT count(*)::int FROM copies) AS copies`;
      if (gone!.copies > 0) await refillNewest(tx);
      return gone!.n;
    });
    total += deleted;
    if (deleted < batch) break;
  }
  // The position blocks of the time window (sql/014_audit_time_blocks.sql) that no longer hold a record: a block
  // all of whose records were older than the cutoff. One whose record was skipped above (locked by another node's
  // purge) is kept for that record, and goes with it on a later run.
  // In three steps: the blocks old enough, those of them still holding a record (over every shard), the rest deleted.
  const old = await sql<{ block: string }[]>`
    SELECT block::text AS block FROM audit_time_block WHERE max_time < now() - make_interval(days => ${days}) ORDER BY block`;
  if (old.length > 0) {
    const blocks = old.map((b) => b.block);
    const held = await acrossTenants(
      sql,
      (db) => db<{ block: string }[]>`
      SELECT DISTINCT (a.position / ${BLOCK})::text AS block FROM audit_log a
      WHERE a.position >= ${blocks[0]!}::bigint * ${BLOCK} AND a.position < (${blocks.at(-1)!}::bigint + 1) * ${BLOCK}
        AND a.position / ${BLOCK} = ANY (${blocks}::bigint[])`,
    );
    const keep = new Set(held.map((h) => h.block));
    const empty = blocks.filter((b) => !keep.has(b));
    if (empty.length > 0) await sql`DELETE FROM audit_time_block WHERE block = ANY (${empty}::bigint[])`;
  }
  return total;
}
