import type { Db, Tx } from '../db/database.js';
import { fromRow, selectList } from '../db/fields.js';
import { pageOf, type PageQuery } from '../db/page.js';
import { assert } from '../core/app.error.js';
import { formatDateTime } from '../core/time.js';
import type { Actor } from '../identity/caller.js';
import { PLATFORM_TENANT } from '../identity/roles.js';
import { inTenantSubtree, inTenantSubtreeOf } from '../identity/scope.js';
import { diff, recordAudit, type Changes } from '../audit/audit.record.js';
import type { AuditRecord } from '../audit/audit.schema.js';
import { ATTEMPT_FIELDS, ENDPOINT_FIELDS } from './webhook.fields.js';
import type { WebhookCreate, WebhookDelivery, WebhookEndpoint, WebhookUpdate } from './webhook.schema.js';

// Webhook endpoints and their delivery state (docs/webhooks.md). The
// management functions take the caller's tenant; the delivery functions
// (below "Delivery") take an endpoint row the worker claimed, and every
// statement names that endpoint's tenant.

/** How long the old secret keeps signing after a rotation. */
const ROTATION_OVERLAP = '24 hours';
/** Attempt log retention. */
const DELIVERY_LOG_DAYS = 7;
/** The stored part of a receiver's answer. */
export const RESPONSE_KEPT_BYTES = 1024;

type Row = Record<string, unknown>;

const COLUMNS = (sql: Db) => selectList(sql, 'e', ENDPOINT_FIELDS);
const toEndpoint = (row: Row): WebhookEndpoint => fromRow(row, ENDPOINT_FIELDS);

/**
 * What an audit record says of an endpoint: never its secret, never its
 * delivery bookkeeping. An update's record is diff() of two of these, the
 * audit room's rule for every entity's update (which also drops any field
 * named like a secret).
 */
const described = (e: Pick<WebhookEndpoint, 'url' | 'events' | 'description' | 'status'>): Changes => ({
  url: e.url,
  events: e.events,
  description: e.description,
  status: e.status,
});

export async function getEndpoint(sql: Db, tenantId: string, id: number): Promise<WebhookEndpoint | undefined> {
  const [row] = await sql<Row[]>`SELECT ${COLUMNS(sql)} FROM webhook_endpoint e WHERE e.tenant_id = ${tenantId} AND e.endpoint_id = ${id}`;
  return row && toEndpoint(row);
}

export async function listEndpoints(sql: Db, tenantId: string, page: PageQuery): Promise<{ total: number; rows: WebhookEndpoint[] }> {
  const result = await pageOf<Row>(
    sql,
    { select: COLUMNS(sql), from: sql`webhook_endpoint e WHERE e.tenant_id = ${tenantId}`, orderBy: sql`e.endpoint_id` },
    page,
  );
  return { total: result.total, rows: result.rows.map(toEndpoint) };
}

/**
 * A new endpoint starts at the end of the feed: it receives what is
 * committed from now on, not the history (a replay can reach back).
 */
export async function createEndpoint(tx: Tx, actor: Actor, input: WebhookCreate, secret: string): Promise<WebhookEndpoint> {
  const [row] = await tx<Row[]>`
    INSERT INTO webhook_endpoint AS e (tenant_id, url, events, description, secret, cursor, create_by)
    SELECT ${actor.tenantId}, ${input.url}, ${input.events ?? []}::text[], ${input.description ?? ''}, ${secret}, f.last_position, ${actor.userName}
    FROM audit_feed f WHERE f.id = 1
    RETURNING ${COLUMNS(tx)}`;
  const endpoint = toEndpoint(row!);
  await recordAudit(tx, actor, [{ action: 'webhook.create', entityType: 'webhook', entityId: endpoint.id, changes: described(endpoint) }]);
  return endpoint;
}

/** The endpoint, locked for the rest of the transaction; 404 when the caller's tenant has none of that id. */
async function lockEndpoint(tx: Tx, tenantId: string, id: number): Promise<WebhookEndpoint & { cursor: string }> {
  const [row] = await tx<Row[]>`
    SELECT ${COLUMNS(tx)} FROM webhook_endpoint e WHERE e.tenant_id = ${tenantId} AND e.endpoint_id = ${id} FOR UPDATE`;
  assert(row, 404, `Webhook endpoint ${id} not found`);
  return toEndpoint(row);
}

/**
 * Full replacement. Enabling a disabled endpoint clears its failure state,
 * so delivery resumes at once from the cursor (nothing was skipped while it
 * was off); disabling keeps the cursor.
 */
export async function updateEndpoint(tx: Tx, actor: Actor, input: WebhookUpdate): Promise<void> {
  const before = await lockEndpoint(tx, actor.tenantId, input.id);
  const resumes = input.status === '0' && before.status === '1';
  await tx`
    UPDATE webhook_endpoint SET url = ${input.url}, events = ${input.events}::text[], description = ${input.description},
      status = ${input.status}, update_by = ${actor.userName}, update_time = now(),
      disabled_reason = CASE WHEN ${input.status} = '0' THEN NULL ELSE disabled_reason END
      ${resumes ? tx`, failures = 0, retry_at = NULL, last_error = NULL` : tx``}
    WHERE tenant_id = ${actor.tenantId} AND endpoint_id = ${input.id}`;
  const changes = diff(described(before), described(input));
  await recordAudit(tx, actor, [{ action: 'webhook.update', entityType: 'webhook', entityId: input.id, changes }]);
}

export async function deleteEndpoint(tx: Tx, actor: Actor, id: number): Promise<void> {
  const before = await lockEndpoint(tx, actor.tenantId, id);
  await tx`DELETE FROM webhook_endpoint WHERE tenant_id = ${actor.tenantId} AND endpoint_id = ${id}`;
  await recordAudit(tx, actor, [{ action: 'webhook.delete', entityType: 'webhook', entityId: id, changes: described(before) }]);
}

/** A new secret; the old one keeps signing beside it for ROTATION_OVERLAP, so receivers can switch without losing a delivery. */
export async function rotateSecret(tx: Tx, actor: Actor, id: number, secret: string): Promise<{ secret: string; previousSecretUntil: string }> {
  await lockEndpoint(tx, actor.tenantId, id);
  const [row] = await tx<{ until: Date }[]>`
    UPDATE webhook_endpoint SET previous_secret = secret, previous_until = now() + ${ROTATION_OVERLAP}::interval,
      secret = ${secret}, update_by = ${actor.userName}, update_time = now()
    WHERE tenant_id = ${actor.tenantId} AND endpoint_id = ${id}
    RETURNING previous_until AS until`;
  await recordAudit(tx, actor, [{ action: 'webhook.update', entityType: 'webhook', entityId: id, changes: { secret: 'rotated' } }]);
  return { secret, previousSecretUntil: formatDateTime(row!.until) };
}

/**
 * Rule: a replay moves the cursor back (never forward: that would skip
 * events), and clears the failure state so the replayed events go at once.
 */
export async function replayFrom(tx: Tx, actor: Actor, id: number, after: string): Promise<void> {
  const before = await lockEndpoint(tx, actor.tenantId, id);
  assert(BigInt(after) <= BigInt(before.cursor), 400, `after (${after}) is beyond the endpoint's cursor (${before.cursor}): a replay only goes back`);
  // A replay from before what retention kept starts at the oldest record kept: those before are gone for everyone.
  await tx`
    UPDATE webhook_endpoint SET cursor = GREATEST(${after}::bigint,
        COALESCE((SELECT min(r.position) - 1 FROM audit_log r WHERE r.position IS NOT NULL), ${after}::bigint)),
      failures = 0, retry_at = NULL, last_error = NULL,
      update_by = ${actor.userName}, update_time = now()
    WHERE tenant_id = ${actor.tenantId} AND endpoint_id = ${id}`;
  await recordAudit(tx, actor, [
    { action: 'webhook.update', entityType: 'webhook', entityId: id, changes: { cursor: { before: before.cursor, after } } },
  ]);
}

/** The attempt log of one endpoint, newest first. */
export async function listDeliveries(sql: Db, tenantId: string, id: number, page: PageQuery): Promise<{ total: number; rows: WebhookDelivery[] }> {
  assert(await getEndpoint(sql, tenantId, id), 404, `Webhook endpoint ${id} not found`);
  const result = await pageOf<Row>(
    sql,
    {
      select: selectList(sql, 'd', ATTEMPT_FIELDS),
      from: sql`webhook_delivery d WHERE d.tenant_id = ${tenantId} AND d.endpoint_id = ${id}`,
      orderBy: sql`d.delivery_id DESC`,
    },
    page,
  );
  return { total: result.total, rows: result.rows.map((r) => fromRow(r, ATTEMPT_FIELDS)) };
}

// ---------------------------------------------------------------- Delivery

/** The secrets that sign now: the current one, and the previous one during a rotation's overlap. */
const secretsNow = (sql: Db) => sql`CASE WHEN previous_until > now() THEN ARRAY[secret, previous_secret] ELSE ARRAY[secret] END`;

/** An endpoint a node holds the lease of, with what it needs to sign and send. */
export interface ClaimedEndpoint {
  tenantId: string;
  id: number;
  url: string;
  events: string[];
  secrets: string[];
  cursor: string;
  failures: number;
}

/** One attempt, as the attempt log keeps it. */
export interface Attempt {
  eventId: string;
  attempt: number;
  statusCode: number | null;
  error: string | null;
  ms: number;
  response: string;
}

/**
 * Rule: the records an endpoint (the row `c`) receives are those of its
 * tenant and of every tenant below it (the platform tenant's endpoints: all),
 * whose action its filter names or whose prefix (`dept.*`) it lists; an
 * empty filter takes all. `a` is the audit_log row.
 *
 * The subtree is walked down from the endpoint's tenant (src/identity/scope.ts).
 * Walked from the column `c.tenant_id`, it is made once per endpoint only when
 * `a` is read in a query level below `c`'s (an EXISTS that PostgreSQL does not
 * merge into the statement, a subquery); in the level of `c` itself it would be
 * walked again for every record. A statement that reads one endpoint, whose
 * tenant it has as a value, passes `tenant` instead: a value is walked once.
 */
const receives = (sql: Db, tenant?: string) => sql`
  (c.tenant_id = ${PLATFORM_TENANT} OR ${tenant === undefined ? inTenantSubtreeOf(sql, 'a', sql`c.tenant_id`) : inTenantSubtree(sql, 'a', tenant)})
  AND (cardinality(c.events) = 0 OR a.action = ANY(c.events) OR split_part(a.action, '.', 1) || '.*' = ANY(c.events))`;

/**
 * The next records for a claimed endpoint after the cursor it holds, in feed
 * order. The endpoint's tenant goes to `receives` as a value: the statement
 * holds it to that tenant, and its subtree is then walked once.
 */
export async function pendingRecords(sql: Db, endpoint: Pick<ClaimedEndpoint, 'tenantId' | 'id' | 'cursor'>, limit: number) {
  return sql<(Omit<AuditRecord, 'time'> & { time: Date })[]>`
    SELECT a.position::text AS id, a.time, a.tenant_id AS "tenantId", a.user_name AS "userName",
      a.user_tenant_id AS "userTenantId", a.action, a.entity_type AS "entityType", a.entity_id AS "entityId",
      a.request_id AS "requestId", a.ip, a.changes
    FROM webhook_endpoint c, audit_log a
    WHERE c.tenant_id = ${endpoint.tenantId} AND c.endpoint_id = ${endpoint.id}
      AND a.position > ${endpoint.cursor}::bigint AND ${receives(sql, endpoint.tenantId)}
    ORDER BY a.position
    LIMIT ${limit}`;
}

/**
 * The endpoints of every tenant a node may deliver to now: enabled, of a
 * live and enabled tenant (a disabled tenant's endpoints pause; the cursor
 * waits), not leased by a live node, not waiting for a retry, and not behind
 * records retention purged (maintenance disables those: "cursor expired"). Each is
 * leased to `node` for `leaseSeconds` in the same statement, so two nodes
 * never claim one endpoint (SKIP LOCKED: a row another node is claiming is
 * left to it). Endpoints with nothing pending are not claimed: the EXISTS
 * asks the audit log the same question pendingRecords does. Its OFFSET 0
 * keeps PostgreSQL from turning it into a join, so the records are read a
 * level below the endpoint and its tenant's subtree is walked once per
 * endpoint, not once per record (receives).
 */
export async function claimDue(sql: Db, node: string, limit: number, leaseSeconds: number): Promise<ClaimedEndpoint[]> {
  return sql<ClaimedEndpoint[]>`
    UPDATE webhook_endpoint e SET lease_owner = ${node}, lease_until = now() + make_interval(secs => ${leaseSeconds})
    FROM (
      SELECT c.tenant_id, c.endpoint_id FROM webhook_endpoint c
      JOIN sys_tenant t ON t.tenant_id = c.tenant_id AND t.del_flag = '0' AND t.status = '0'
      WHERE c.status = '0' AND NOT ${cursorExpired(sql)} AND (c.lease_until IS NULL OR c.lease_until < now()) AND (c.retry_at IS NULL OR c.retry_at <= now())
        AND EXISTS (
          SELECT 1 FROM audit_log a
          WHERE a.position > c.cursor
            AND ${receives(sql)}
          OFFSET 0)
      ORDER BY c.retry_at NULLS FIRST, c.endpoint_id
      LIMIT ${limit}
      FOR UPDATE OF c SKIP LOCKED
    ) due
    WHERE e.tenant_id = due.tenant_id AND e.endpoint_id = due.endpoint_id
    RETURNING e.tenant_id AS "tenantId", e.endpoint_id::int AS id, e.url, e.events,
      ${secretsNow(sql)} AS secrets,
      e.cursor::text AS cursor, e.failures`;
}

/**
 * After a 2xx: the cursor moves to the delivered record and the lease is
 * extended, in one statement with the attempt's log row. Only while `node`
 * still holds the lease and nobody moved the cursor or disabled the
 * endpoint meanwhile (a replay, a PUT, a delete): undefined tells the worker
 * to stop and let the endpoint be claimed afresh. It answers the URL and
 * secrets as they are now, so a PUT or a rotation reaches the next send, and
 * `goOn` false when the batch in hand is stale (the filter changed, the
 * tenant was disabled or deleted): the run stops and the next claim decides.
 */
export async function advance(
  sql: Db,
  node: string,
  e: ClaimedEndpoint,
  position: string,
  attempt: Attempt,
  leaseSeconds: number,
): Promise<(Pick<ClaimedEndpoint, 'url' | 'secrets'> & { goOn: boolean }) | undefined> {
  const [row] = await sql<(Pick<ClaimedEndpoint, 'url' | 'secrets'> & { goOn: boolean })[]>`
    WITH moved AS (
      UPDATE webhook_endpoint w SET cursor = ${position}::bigint, failures = 0, retry_at = NULL, last_error = NULL,
        lease_until = now() + make_interval(secs => ${leaseSeconds})
      WHERE w.tenant_id = ${e.tenantId} AND w.endpoint_id = ${e.id} AND w.lease_owner = ${node} AND w.cursor = ${e.cursor}::bigint AND w.status = '0'
      RETURNING w.url, ${secretsNow(sql)} AS secrets,
        w.events = ${e.events}::text[] AND EXISTS (
          SELECT 1 FROM sys_tenant t WHERE t.tenant_id = w.tenant_id AND t.del_flag = '0' AND t.status = '0') AS "goOn"
    ), logged AS (${logAttempt(sql, e, attempt)})
    SELECT url, secrets, "goOn" FROM moved`;
  return row;
}

/** An attempt's log row; none when the endpoint was deleted meanwhile. */
const logAttempt = (sql: Db, e: Pick<ClaimedEndpoint, 'tenantId' | 'id'>, a: Attempt) => sql`
  INSERT INTO webhook_delivery (tenant_id, endpoint_id, event_id, attempt, status_code, error, ms, response)
  SELECT w.tenant_id, w.endpoint_id, ${a.eventId}, ${a.attempt}, ${a.statusCode}, ${a.error}, ${a.ms}, ${a.response}
  FROM webhook_endpoint w WHERE w.tenant_id = ${e.tenantId} AND w.endpoint_id = ${e.id}`;

/** What a test delivery needs: where to, and the secrets that sign. */
export async function signingTarget(sql: Db, tenantId: string, id: number): Promise<{ url: string; secrets: string[] } | undefined> {
  const [row] = await sql<{ url: string; secrets: string[] }[]>`
    SELECT url, ${secretsNow(sql)} AS secrets
    FROM webhook_endpoint WHERE tenant_id = ${tenantId} AND endpoint_id = ${id}`;
  return row;
}

/** A test delivery's attempt, logged beside the real ones. */
export async function recordTestAttempt(sql: Db, tenantId: string, id: number, attempt: Attempt): Promise<void> {
  await logAttempt(sql, { tenantId, id }, attempt);
}

/** After a failure with retries left: the head waits until `retryAt`; the lease is given up so any node may retry. */
export async function scheduleRetry(sql: Db, node: string, e: ClaimedEndpoint, attempt: Attempt, retryInMs: number): Promise<void> {
  await sql`
    WITH failed AS (
      UPDATE webhook_endpoint SET failures = ${attempt.attempt}, last_error = ${attempt.error},
        retry_at = now() + make_interval(secs => ${retryInMs / 1000}), lease_owner = NULL, lease_until = NULL
      WHERE tenant_id = ${e.tenantId} AND endpoint_id = ${e.id} AND lease_owner = ${node} AND cursor = ${e.cursor}::bigint
    ), logged AS (${logAttempt(sql, e, attempt)})
    SELECT 1`;
}

/** The service's own name in the audit records it writes (webhook.disabled). */
const SERVICE_ACTOR = 'system';

/**
 * Disables an endpoint (410, retries exhausted, cursor expired), with an
 * audit record `webhook.disabled` in the same transaction. The cursor stays:
 * enabling it again resumes where delivery stopped.
 */
export async function disableEndpoint(
  tx: Tx,
  e: Pick<ClaimedEndpoint, 'tenantId' | 'id' | 'cursor'>,
  reason: string,
  by: { node: string; attempt: Attempt } | 'maintenance',
): Promise<void> {
  const attempt = by === 'maintenance' ? undefined : by.attempt;
  // Only if nothing changed meanwhile: the cursor is where it was when the decision was made (no replay), and a
  // worker still holds the lease (no other node took over).
  const [row] = await tx<{ url: string }[]>`
    UPDATE webhook_endpoint c SET status = '1', disabled_reason = ${reason}, lease_owner = NULL, lease_until = NULL,
      ${attempt ? tx`failures = ${attempt.attempt}, last_error = ${attempt.error},` : tx``} retry_at = NULL
    WHERE c.tenant_id = ${e.tenantId} AND c.endpoint_id = ${e.id} AND c.status = '0'
      AND c.cursor = ${e.cursor}::bigint ${by === 'maintenance' ? tx`` : tx`AND c.lease_owner = ${by.node}`}
    RETURNING c.url`;
  if (attempt) await logAttempt(tx, e, attempt);
  if (!row) return;
  const actor = { tenantId: e.tenantId, userName: SERVICE_ACTOR, userTenantId: e.tenantId };
  await recordAudit(tx, actor, [
    { action: 'webhook.disabled', entityType: 'webhook', entityId: e.id, changes: { status: { before: '0', after: '1' }, reason, url: row.url } },
  ]);
}

/** Gives up a lease early (nothing left to send now), so another node need not wait for it to expire. */
export async function release(sql: Db, node: string, e: Pick<ClaimedEndpoint, 'tenantId' | 'id'>): Promise<void> {
  await sql`
    UPDATE webhook_endpoint SET lease_owner = NULL, lease_until = NULL
    WHERE tenant_id = ${e.tenantId} AND endpoint_id = ${e.id} AND lease_owner = ${node}`;
}

// ------------------------------------------------------------- Maintenance

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
 * Rule (per endpoint row `c`): positions are gap-free, so a cursor below the
 * oldest retained position (or below the end of an emptied log) means
 * records after it were purged before this endpoint received them.
 */
const cursorExpired = (sql: Db) => sql`
  c.cursor + 1 < COALESCE(
    (SELECT min(r.position) FROM audit_log r WHERE r.position IS NOT NULL),
    (SELECT f.last_position + 1 FROM audit_feed f WHERE f.id = 1))`;

/**
 * Rule: when retention purged records an endpoint had not received, it is
 * disabled ("cursor expired") rather than silently skipping them. Positions
 * are gap-free, so a cursor below the oldest retained position (or below the
 * end of an emptied log) means records after it are gone.
 */
export async function expiredCursors(sql: Db): Promise<Pick<ClaimedEndpoint, 'tenantId' | 'id' | 'cursor'>[]> {
  return sql<Pick<ClaimedEndpoint, 'tenantId' | 'id' | 'cursor'>[]>`
    SELECT c.tenant_id AS "tenantId", c.endpoint_id::int AS id, c.cursor::text AS cursor
    FROM webhook_endpoint c WHERE c.status = '0' AND ${cursorExpired(sql)}`;
}

/** The oldest position retention kept, or null for an empty log: a run stops before a record past a purged gap. */
export async function oldestRetained(sql: Db): Promise<string | null> {
  const [row] = await sql<{ oldest: string | null }[]>`SELECT min(position)::text AS oldest FROM audit_log WHERE position IS NOT NULL`;
  return row!.oldest;
}

/** Drops attempt log rows older than DELIVERY_LOG_DAYS, in batches. */
export async function purgeDeliveries(sql: Db, batch = 1000): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await sql`
      DELETE FROM webhook_delivery WHERE (tenant_id, endpoint_id, delivery_id) IN (
        SELECT tenant_id, endpoint_id, delivery_id FROM webhook_delivery
        WHERE time < now() - make_interval(days => ${DELIVERY_LOG_DAYS}) LIMIT ${batch})`;
    total += deleted.count;
    if (deleted.count < batch) return total;
  }
}

/** Per enabled endpoint: records waiting (up to `cap`) and failed attempts at the head; for the metrics. */
export async function backlogs(sql: Db, cap = 10_000): Promise<{ tenantId: string; id: number; backlog: number; failures: number }[]> {
  return sql`
    SELECT c.tenant_id AS "tenantId", c.endpoint_id::int AS id, c.failures,
      (SELECT count(*)::int FROM (
        SELECT 1 FROM audit_log a
        WHERE a.position > c.cursor
          AND ${receives(sql)}
        LIMIT ${cap}) p) AS backlog
    FROM webhook_endpoint c WHERE c.status = '0'`;
}
