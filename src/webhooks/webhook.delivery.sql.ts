import type { Db, Tx } from '../db/database.js';
import { acrossTenants, isOnCitus } from '../db/citus.js';
import { recordAudit } from '../audit/audit.record.js';
import { recordColumns } from '../audit/audit.fields.js';
import { published, publishedPosition } from '../audit/audit.sql.js';
import { claimEachDue } from './webhook.citus.sql.js';
import { cursorExpired, receives } from './webhook.rules.js';

// The delivery queue's statements (docs/webhooks.md#delivery), run by the
// worker in webhook.delivery.ts. The claim looks across every tenant; the
// others take an endpoint row the worker claimed and name that endpoint's
// tenant.

/** The secrets that sign now: the current one, and the previous one during a rotation's overlap. */
export const secretsNow = (sql: Db, row?: string) =>
  row === undefined
    ? sql`CASE WHEN previous_until > now() THEN ARRAY[secret, previous_secret] ELSE ARRAY[secret] END`
    : sql`CASE WHEN ${sql(row)}.previous_until > now() THEN ARRAY[${sql(row)}.secret, ${sql(row)}.previous_secret] ELSE ARRAY[${sql(row)}.secret] END`;

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
  /** When it was answered, if it is logged later than that (a batch); now otherwise. */
  time?: Date;
}

/**
 * The next records for a claimed endpoint after the cursor it holds, in feed
 * order, up to the published position. The endpoint goes to `receives` as
 * values (its tenant and the filter it was claimed with): the statement reads
 * audit_log alone, its tenant's subtree walked once; on Citus over every
 * shard. A filter changed since the claim is caught by `advance`.
 */
export async function pendingRecords(sql: Db, endpoint: Pick<ClaimedEndpoint, 'tenantId' | 'events' | 'cursor'>, limit: number) {
  const last = await publishedPosition(sql);
  return acrossTenants(
    sql,
    (db) => db`
    SELECT ${recordColumns(db)}
    FROM audit_log a
    WHERE a.position > ${endpoint.cursor}::bigint AND ${published(db, last)} AND ${receives(db, endpoint)}
    ORDER BY a.position
    LIMIT ${limit}`,
  );
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
 * endpoint, not once per record (receives). On Citus, which cannot plan that
 * correlation across shards, the same rules run endpoint by endpoint
 * (webhook.citus.sql.ts).
 */
export async function claimDue(sql: Db, node: string, limit: number, leaseSeconds: number): Promise<ClaimedEndpoint[]> {
  if (isOnCitus()) return claimEachDue(sql, node, limit, leaseSeconds);
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
 * After one or more 2xx in a row: the cursor moves to the last record
 * delivered and the lease is extended, in one statement with the attempts'
 * log rows. Only while `node` still holds the lease and nobody moved the
 * cursor or disabled the endpoint meanwhile (a replay, a PUT, a delete):
 * undefined tells the worker to stop and let the endpoint be claimed afresh
 * (the attempts are logged all the same, while the endpoint exists). It
 * answers the URL and secrets as they are now, so a PUT or a rotation
 * reaches the next send, and `goOn` false when the records in hand are stale
 * (the filter changed, the tenant was disabled or deleted): the run stops and
 * the next claim decides.
 */
export async function advance(
  sql: Db,
  node: string,
  e: ClaimedEndpoint,
  position: string,
  attempts: Attempt[],
  leaseSeconds: number,
): Promise<(Pick<ClaimedEndpoint, 'url' | 'secrets'> & { goOn: boolean }) | undefined> {
  // The row image comes back through the CTE: Citus refuses now() (the secrets' rule) in an UPDATE's RETURNING.
  const [row] = await sql<(Pick<ClaimedEndpoint, 'url' | 'secrets'> & { goOn: boolean })[]>`
    WITH moved AS (
      UPDATE webhook_endpoint w SET cursor = ${position}::bigint, failures = 0, retry_at = NULL, last_error = NULL,
        lease_until = now() + make_interval(secs => ${leaseSeconds})
      WHERE w.tenant_id = ${e.tenantId} AND w.endpoint_id = ${e.id} AND w.lease_owner = ${node} AND w.cursor = ${e.cursor}::bigint AND w.status = '0'
      RETURNING w.tenant_id, w.url, w.events, w.secret, w.previous_secret, w.previous_until
    ), logged AS (${logAttempts(sql, e, attempts)})
    SELECT m.url, ${secretsNow(sql, 'm')} AS secrets,
      m.events = ${e.events}::text[] AND EXISTS (
        SELECT 1 FROM sys_tenant t WHERE t.tenant_id = m.tenant_id AND t.del_flag = '0' AND t.status = '0') AS "goOn"
    FROM moved m`;
  return row;
}

/**
 * Attempts' log rows, in the order made (one JSON parameter however many);
 * none when the endpoint was deleted meanwhile.
 */
const logAttempts = (sql: Db, e: Pick<ClaimedEndpoint, 'tenantId' | 'id'>, attempts: Attempt[]) => sql`
  INSERT INTO webhook_delivery (tenant_id, endpoint_id, event_id, attempt, status_code, error, ms, response, time)
  SELECT ${e.tenantId}, w.endpoint_id, a."eventId", a.attempt, a."statusCode", a.error, a.ms, a.response, coalesce(a.time, now())
  FROM webhook_endpoint w,
    ROWS FROM (jsonb_to_recordset(${JSON.stringify(attempts)}::text::jsonb)
      AS ("eventId" text, attempt int, "statusCode" int, error text, ms int, response text, time timestamptz))
    WITH ORDINALITY AS a("eventId", attempt, "statusCode", error, ms, response, time, n)
  WHERE w.tenant_id = ${e.tenantId} AND w.endpoint_id = ${e.id}
  ORDER BY a.n`;

/** What a test delivery needs: where to, and the secrets that sign. */
export async function signingTarget(sql: Db, tenantId: string, id: number): Promise<{ url: string; secrets: string[] } | undefined> {
  const [row] = await sql<{ url: string; secrets: string[] }[]>`
    SELECT url, ${secretsNow(sql)} AS secrets
    FROM webhook_endpoint WHERE tenant_id = ${tenantId} AND endpoint_id = ${id}`;
  return row;
}

/** A test delivery's attempt, logged beside the real ones. */
export async function recordTestAttempt(sql: Db, tenantId: string, id: number, attempt: Attempt): Promise<void> {
  await logAttempts(sql, { tenantId, id }, [attempt]);
}

/** After a failure with retries left: the head waits until `retryAt`; the lease is given up so any node may retry. */
export async function scheduleRetry(sql: Db, node: string, e: ClaimedEndpoint, attempt: Attempt, retryInMs: number): Promise<void> {
  await sql`
    WITH failed AS (
      UPDATE webhook_endpoint SET failures = ${attempt.attempt}, last_error = ${attempt.error},
        retry_at = now() + make_interval(secs => ${retryInMs / 1000}), lease_owner = NULL, lease_until = NULL
      WHERE tenant_id = ${e.tenantId} AND endpoint_id = ${e.id} AND lease_owner = ${node} AND cursor = ${e.cursor}::bigint
    ), logged AS (${logAttempts(sql, e, [attempt])})
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
  if (attempt) await logAttempts(tx, e, [attempt]);
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
