import type { Db } from '../db/database.js';
import { acrossTenants } from '../db/citus.js';
import { secretsNow, type ClaimedEndpoint } from './webhook.delivery.sql.js';
import { cursorExpired, receives, type EndpointFilter, type FeedBounds } from './webhook.rules.js';

// The delivery queue's statements over every endpoint, as Citus runs them
// (docs/scale-out.md#across-tenants-by-design). On one PostgreSQL each is one
// statement that reads an endpoint and, correlated to it, the audit records of
// its tenant's subtree (webhook.delivery.sql.ts claimDue,
// webhook.maintenance.sql.ts). Citus cannot plan that correlation across
// shards, so here the same rules run in steps: the feed's bounds as values,
// the candidate endpoints over every shard, then for each the question "is
// anything pending?" by value (audit_log alone, over every shard), and the
// claim or the cursor's move as a statement on the endpoint's own shard that
// holds only while the row is as it was read. Two nodes never both claim an
// endpoint: the second one's UPDATE finds the lease taken.

/** Where the feed stands: the oldest retained and the last published position. */
async function feedBounds(sql: Db): Promise<FeedBounds> {
  const [row] = await acrossTenants(
    sql,
    (db) => db<FeedBounds[]>`
    SELECT (SELECT min(position)::text FROM audit_log WHERE position IS NOT NULL) AS oldest,
      (SELECT last_position::text FROM audit_feed WHERE id = 1) AS last`,
  );
  return row!;
}

/** Whether an endpoint (by value) has a published record after `cursor` and up to `upTo`. */
async function hasPending(sql: Db, endpoint: EndpointFilter, cursor: string, upTo: string): Promise<boolean> {
  const rows = await acrossTenants(
    sql,
    (db) => db`
    SELECT 1 FROM audit_log a
    WHERE a.position > ${cursor}::bigint AND a.position <= ${upTo}::bigint AND ${receives(db, endpoint)}
    LIMIT 1`,
  );
  return rows.length > 0;
}

interface Candidate extends EndpointFilter {
  id: number;
  cursor: string;
}

/** Enabled endpoints of live, enabled tenants, behind the feed, not expired, with no live lease and no retry waiting. */
async function candidates(sql: Db, bounds: FeedBounds, where: 'due' | 'idle', limit: number): Promise<Candidate[]> {
  return acrossTenants(
    sql,
    (db) => db<Candidate[]>`
    SELECT c.tenant_id AS "tenantId", c.endpoint_id::int AS id, c.cursor::text AS cursor, c.events
    FROM webhook_endpoint c
    JOIN sys_tenant t ON t.tenant_id = c.tenant_id AND t.del_flag = '0' AND t.status = '0'
    WHERE c.status = '0' AND c.cursor < ${bounds.last}::bigint AND NOT ${cursorExpired(db, bounds)}
      AND (c.lease_until IS NULL OR c.lease_until < now())
      AND ${where === 'due' ? db`(c.retry_at IS NULL OR c.retry_at <= now())` : db`c.failures = 0`}
    ORDER BY c.retry_at NULLS FIRST, c.endpoint_id
    LIMIT ${limit}`,
  );
}

/** claimDue on Citus: up to `limit` endpoints with something pending, each leased to `node` on its own shard. */
export async function claimEachDue(sql: Db, node: string, limit: number, leaseSeconds: number): Promise<ClaimedEndpoint[]> {
  const bounds = await feedBounds(sql);
  const claimed: ClaimedEndpoint[] = [];
  for (const c of await candidates(sql, bounds, 'due', limit * 4)) {
    if (claimed.length >= limit) break;
    if (!(await hasPending(sql, c, c.cursor, bounds.last))) continue;
    // The row image comes back from a CTE: Citus refuses now() (the secrets' rule) in an UPDATE's RETURNING.
    const [row] = await sql<ClaimedEndpoint[]>`
      WITH leased AS (
        UPDATE webhook_endpoint e SET lease_owner = ${node}, lease_until = now() + make_interval(secs => ${leaseSeconds})
        WHERE e.tenant_id = ${c.tenantId} AND e.endpoint_id = ${c.id} AND e.status = '0' AND e.cursor = ${c.cursor}::bigint
          AND (e.lease_until IS NULL OR e.lease_until < now()) AND (e.retry_at IS NULL OR e.retry_at <= now())
        RETURNING e.tenant_id, e.endpoint_id, e.url, e.events, e.secret, e.previous_secret, e.previous_until, e.cursor, e.failures)
      SELECT l.tenant_id AS "tenantId", l.endpoint_id::int AS id, l.url, l.events, ${secretsNow(sql, 'l')} AS secrets,
        l.cursor::text AS cursor, l.failures
      FROM leased l`;
    if (row) claimed.push(row);
  }
  return claimed;
}

/** catchUpIdle on Citus: each idle endpoint whose filter matched nothing up to the feed's end moves there. */
export async function catchUpEachIdle(sql: Db, batch = 1000): Promise<number> {
  const bounds = await feedBounds(sql);
  let moved = 0;
  for (const c of await candidates(sql, bounds, 'idle', batch)) {
    if (await hasPending(sql, c, c.cursor, bounds.last)) continue;
    const done = await sql`
      UPDATE webhook_endpoint c SET cursor = ${bounds.last}::bigint
      WHERE c.tenant_id = ${c.tenantId} AND c.endpoint_id = ${c.id} AND c.status = '0' AND c.cursor = ${c.cursor}::bigint
        AND c.failures = 0 AND (c.lease_until IS NULL OR c.lease_until < now())`;
    moved += done.count;
  }
  return moved;
}

/** expiredCursors on Citus: the rule with the feed's bounds as values. */
export async function expiredEach(sql: Db): Promise<Pick<ClaimedEndpoint, 'tenantId' | 'id' | 'cursor'>[]> {
  const bounds = await feedBounds(sql);
  return acrossTenants(
    sql,
    (db) => db<Pick<ClaimedEndpoint, 'tenantId' | 'id' | 'cursor'>[]>`
    SELECT c.tenant_id AS "tenantId", c.endpoint_id::int AS id, c.cursor::text AS cursor
    FROM webhook_endpoint c WHERE c.status = '0' AND ${cursorExpired(db, bounds)}`,
  );
}

/** Endpoints whose backlog one scrape reads at once: a few of the pool's connections, never all of them. */
const BACKLOG_READS_AT_ONCE = 4;

/**
 * backlogs on Citus: each enabled endpoint's waiting records and lag, read by
 * value. Each endpoint's read is a statement over every shard; a scrape waits
 * a second at most (src/metrics/scrape.read.ts), so they run a few at a time
 * rather than one after another.
 */
export async function backlogEach(sql: Db, cap: number): Promise<{ tenantId: string; id: number; backlog: number; failures: number; lag: number }[]> {
  const endpoints = await acrossTenants(
    sql,
    (db) => db<(Candidate & { failures: number })[]>`
    SELECT c.tenant_id AS "tenantId", c.endpoint_id::int AS id, c.cursor::text AS cursor, c.events, c.failures
    FROM webhook_endpoint c WHERE c.status = '0' ORDER BY c.tenant_id, c.endpoint_id`,
  );
  const backlogOf = async (c: Candidate & { failures: number }) => {
    const [row] = await acrossTenants(
      sql,
      (db) => db<{ backlog: number; lag: number }[]>`
      SELECT count(*)::int AS backlog, coalesce(extract(epoch FROM now() - min(p.time))::float8, 0) AS lag FROM (
        SELECT a.time FROM audit_log a WHERE a.position > ${c.cursor}::bigint AND ${receives(db, c)}
        ORDER BY a.position LIMIT ${cap}) p`,
    );
    return { tenantId: c.tenantId, id: c.id, backlog: row!.backlog, failures: c.failures, lag: row!.lag };
  };
  const out = [];
  for (let i = 0; i < endpoints.length; i += BACKLOG_READS_AT_ONCE) {
    out.push(...(await Promise.all(endpoints.slice(i, i + BACKLOG_READS_AT_ONCE).map(backlogOf))));
  }
  return out;
}
