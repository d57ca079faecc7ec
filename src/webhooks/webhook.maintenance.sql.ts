import type { Db } from '../db/database.js';
import { acrossTenants, isOnCitus } from '../db/citus.js';
import type { ClaimedEndpoint } from './webhook.delivery.sql.js';
import { backlogEach, catchUpEachIdle, expiredEach } from './webhook.citus.sql.js';
import { cursorExpired, receives } from './webhook.rules.js';

// Webhook maintenance (docs/webhooks.md#delivery): what the worker runs on
// its slow timer over every endpoint (idle cursors caught up, expired ones
// found, old attempt logs purged), the oldest record retention kept, and the
// backlog the metrics report.

/** Attempt log retention. */
const DELIVERY_LOG_DAYS = 7;

/**
 * An endpoint whose filter matches nothing new keeps its cursor where it
 * was; moving it up to the end of the feed (when nothing it would receive
 * lies before that end) keeps "behind the feed" meaning "has something to
 * deliver", which the cursor-expiry check and the backlog metric rely on.
 * One statement: its snapshot sees the last position and every record up
 * to it together. Leased or failing endpoints are left to their worker, and
 * an expired cursor is never moved: that would skip what was purged. The
 * NOT EXISTS keeps its own query level (OFFSET 0), as claimDue's EXISTS does,
 * so each endpoint's subtree is walked once (receives).
 */
export async function catchUpIdle(sql: Db): Promise<number> {
  if (isOnCitus()) return catchUpEachIdle(sql);
  const moved = await sql`
    UPDATE webhook_endpoint c SET cursor = f.last_position
    FROM audit_feed f
    WHERE f.id = 1 AND c.status = '0' AND c.cursor < f.last_position AND c.failures = 0 AND NOT ${cursorExpired(sql)}
      AND (c.lease_until IS NULL OR c.lease_until < now())
      AND NOT EXISTS (
        SELECT 1 FROM audit_log a
        WHERE a.position > c.cursor AND a.position <= f.last_position
          AND ${receives(sql)}
        OFFSET 0)`;
  return moved.count;
}

/**
 * Rule: when retention purged records an endpoint had not received, it is
 * disabled ("cursor expired") rather than silently skipping them. Positions
 * are gap-free, so a cursor below the oldest retained position (or below the
 * end of an emptied log) means records after it are gone.
 */
export async function expiredCursors(sql: Db): Promise<Pick<ClaimedEndpoint, 'tenantId' | 'id' | 'cursor'>[]> {
  if (isOnCitus()) return expiredEach(sql);
  return sql<Pick<ClaimedEndpoint, 'tenantId' | 'id' | 'cursor'>[]>`
    SELECT c.tenant_id AS "tenantId", c.endpoint_id::int AS id, c.cursor::text AS cursor
    FROM webhook_endpoint c WHERE c.status = '0' AND ${cursorExpired(sql)}`;
}

/** The oldest position retention kept, or null for an empty log: a run stops before a record past a purged gap. */
export async function oldestRetained(sql: Db): Promise<string | null> {
  const [row] = await acrossTenants(
    sql,
    (db) => db<{ oldest: string | null }[]>`SELECT min(position)::text AS oldest FROM audit_log WHERE position IS NOT NULL`,
  );
  return row!.oldest;
}

/** Drops attempt log rows older than DELIVERY_LOG_DAYS, in batches. */
export async function purgeDeliveries(sql: Db, batch = 1000): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await acrossTenants(
      sql,
      (db) => db`
      DELETE FROM webhook_delivery WHERE (tenant_id, endpoint_id, delivery_id) IN (
        SELECT tenant_id, endpoint_id, delivery_id FROM webhook_delivery
        WHERE time < now() - make_interval(days => ${DELIVERY_LOG_DAYS}) LIMIT ${batch})`,
    );
    total += deleted.count;
    if (deleted.count < batch) return total;
  }
}

/**
 * Per enabled endpoint, for the metrics: records waiting (up to `cap`),
 * failed attempts at the head, and the lag: how many seconds ago the oldest
 * record it has not received was written (0 when none waits), which reads
 * the same for a slow receiver, a failing one and a delivery loop that falls
 * behind. Both reads stay below the endpoint's level (receives).
 */
export async function backlogs(sql: Db, cap = 10_000): Promise<{ tenantId: string; id: number; backlog: number; failures: number; lag: number }[]> {
  if (isOnCitus()) return backlogEach(sql, cap);
  return sql`
    SELECT c.tenant_id AS "tenantId", c.endpoint_id::int AS id, c.failures,
      (SELECT count(*)::int FROM (
        SELECT 1 FROM audit_log a
        WHERE a.position > c.cursor
          AND ${receives(sql)}
        LIMIT ${cap}) p) AS backlog,
      coalesce((
        SELECT extract(epoch FROM now() - a.time)::float8 FROM audit_log a
        WHERE a.position > c.cursor
          AND ${receives(sql)}
        ORDER BY a.position LIMIT 1), 0) AS lag
    FROM webhook_endpoint c WHERE c.status = '0'`;
}
