import type { Sql, Tx } from '../db/database.js';
import { acrossTenants, isOnCitus, transactionAcrossTenants } from '../db/citus.js';
import { BLOCK, FEED_CHANNEL } from './audit.sql.js';
import { keepNewest } from './audit.newest.js';

// The audit sequencer's statements (docs/api-rules.md#audit-trail-and-change-feed):
// positions for the committed records, then the last of them published.
// Run by audit.feed.ts, coalesced, in the background.

/**
 * The sequencer: gives positions to the committed records that have none,
 * in one transaction that holds audit_feed's row lock until it commits,
 * then publishes the last of them (audit_feed.last_position), which every
 * reader of the feed stays at or below.
 *
 * Why this keeps "never missed, never twice": a run reads the records to
 * number after the lock is granted, i.e. after the previous run committed,
 * so its positions start above every position any reader can have seen, and
 * it can only number records whose transactions have already committed. A
 * reader therefore always sees a gap-free prefix of the positions: nothing
 * can later appear below a cursor it holds. (A sequence value taken inside
 * the writing transaction would not do: a transaction that took 7 can commit
 * after one that took 8, and a reader at 8 would never see 7.)
 *
 * Why it publishes after the commit (sql/024_feed_on_citus.sql): on Citus
 * the records lie on several servers, and a commit becomes visible on each
 * of them in turn. The published position is written once the run's commit
 * has returned, so every record at or below it is visible on every server;
 * audit_feed is a reference table, locked on every server, so the next run
 * starts only once this one has committed everywhere, and publishes what an
 * interrupted run (a crash between commit and publish) left unpublished.
 * A statement of its own runs on several shards: acrossTenants. On one
 * PostgreSQL the run publishes in its own transaction (numberAndPublish).
 *
 * The channel it notifies on is FEED_CHANNEL. Returns the last position
 * published, or null when there was nothing new.
 */
export async function assignPositions(sql: Sql, batch = 10_000): Promise<string | null> {
  // Most runs (the polls between writes) find nothing: one statement says so, without a transaction or a lock.
  const [work] = await acrossTenants(
    sql,
    (db) => db<{ todo: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM audit_log WHERE position IS NULL)
      OR (SELECT assigned_position <> last_position FROM audit_feed WHERE id = 1) AS todo`,
  );
  if (!work!.todo) return null;
  if (!isOnCitus()) return numberAndPublish(sql, batch);
  const run = await transactionAcrossTenants(sql, (tx) => numberRecords(tx, batch));
  if (run === null) return null;
  const [published] = await sql<{ last: string }[]>`
    WITH published AS (
      UPDATE audit_feed SET last_position = ${run}::bigint WHERE id = 1 AND last_position < ${run}::bigint RETURNING 1)
    SELECT pg_notify(${FEED_CHANNEL}, ${run}) AS notified, ${run}::text AS last FROM published`;
  return published ? published.last : null;
}

/**
 * A run on one PostgreSQL: a commit is visible everywhere at once there, so
 * the run publishes in its own transaction, and its two statements go out
 * together (pipelined): the lock, then the numbering, the copy of the
 * newest records (audit.newest.ts), the position blocks,
 * both counters and the notification in one statement. That statement
 * starts, and takes its snapshot, once the lock is granted, so it reads what
 * committed before the lock, as numberRecords's statements do. With the
 * check before it, a run is four round trips (check, begin, the two, commit)
 * where the Citus steps take eight (check, begin, lock, read, number,
 * counter, commit, publish); the audit list and the change feed wait for a
 * run before they read (docs/benchmark-log.md#writes-under-load).
 */
async function numberAndPublish(sql: Sql, batch: number): Promise<string | null> {
  const [, published] = await sql.begin((tx) => [
    tx`SELECT 1 FROM audit_feed WHERE id = 1 FOR UPDATE`,
    tx<{ last: string }[]>`
    WITH todo AS (
      SELECT tenant_id, seq, row_number() OVER (ORDER BY seq) AS n
      FROM audit_log WHERE position IS NULL ORDER BY seq LIMIT ${batch}
    ), placed AS (
      UPDATE audit_log a SET position = f.assigned_position + todo.n
      FROM todo, audit_feed f
      WHERE f.id = 1 AND a.tenant_id = todo.tenant_id AND a.seq = todo.seq AND a.position IS NULL
      RETURNING a.*
    ), ${keepNewest(tx)}, blocks AS (${widenBlocks(tx)}
    ), before AS (
      SELECT last_position FROM audit_feed WHERE id = 1
    ), feed AS (
      -- The counter moves to the last position handed out, as the Citus steps move it: a record passed over
      -- (none is, under the lock) leaves a gap, never a position handed out twice. Positions left unpublished
      -- by an interrupted run of those steps are published too.
      UPDATE audit_feed SET assigned_position = coalesce((SELECT max(position) FROM placed), assigned_position),
        last_position = coalesce((SELECT max(position) FROM placed), assigned_position)
      WHERE id = 1
      RETURNING last_position
    )
    SELECT pg_notify(${FEED_CHANNEL}, feed.last_position::text) AS notified, feed.last_position::text AS last
    FROM feed, before WHERE feed.last_position > before.last_position`,
  ]);
  return published!.length > 0 ? published![0]!.last : null;
}

/** One run's transaction on Citus: the records numbered; answers the position to publish, or null when nothing is new. */
async function numberRecords(tx: Tx, batch: number): Promise<string | null> {
  const [feed] = await tx<{ assigned: string; published: string }[]>`
    SELECT assigned_position::text AS assigned, last_position::text AS published FROM audit_feed WHERE id = 1 FOR UPDATE`;
  const todo = await tx<{ tenantId: string; seq: string }[]>`
    SELECT tenant_id AS "tenantId", seq::text AS seq FROM audit_log WHERE position IS NULL ORDER BY seq LIMIT ${batch}`;
  const assigned = BigInt(feed!.assigned);
  if (todo.length === 0) return assigned > BigInt(feed!.published) ? String(assigned) : null;
  const positions = todo.map((_, i) => String(assigned + BigInt(i + 1)));
  const last = positions.at(-1)!;
  // The records, the copy of the newest (audit.newest.ts) and the time spans of their position blocks
  // (sql/014_audit_time_blocks.sql), one statement: a span only widens. `position IS NULL` again: a record is
  // never numbered twice.
  await tx`
    WITH placed AS (
      UPDATE audit_log a SET position = v.position
      FROM unnest(${todo.map((r) => r.tenantId)}::text[], ${todo.map((r) => r.seq)}::bigint[], ${positions}::bigint[]) AS v (tenant_id, seq, position)
      WHERE a.tenant_id = v.tenant_id AND a.seq = v.seq AND a.position IS NULL
      RETURNING a.*
    ), ${keepNewest(tx)}
    ${widenBlocks(tx)}`;
  await tx`UPDATE audit_feed SET assigned_position = ${last}::bigint WHERE id = 1`;
  return last;
}

/**
 * Rule: the time span of each position block (sql/014_audit_time_blocks.sql)
 * covers the times of the records numbered into it; a span only widens.
 * Reads the run's numbered records from `placed` (position, time).
 */
function widenBlocks(tx: Tx) {
  return tx`
    INSERT INTO audit_time_block AS b (block, min_time, max_time)
    SELECT p.block, min(p.time), max(p.time) FROM (SELECT position / ${BLOCK} AS block, time FROM placed) p GROUP BY p.block
    ON CONFLICT (block) DO UPDATE SET min_time = least(b.min_time, EXCLUDED.min_time), max_time = greatest(b.max_time, EXCLUDED.max_time)
    WHERE EXCLUDED.min_time < b.min_time OR EXCLUDED.max_time > b.max_time`;
}
