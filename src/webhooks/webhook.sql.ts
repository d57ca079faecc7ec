import type { Db, Tx } from '../db/database.js';
import { fromRow, selectList } from '../db/fields.js';
import { pageOf, type PageQuery } from '../db/page.js';
import { assert } from '../core/app.error.js';
import { formatDateTime } from '../core/time.js';
import type { Actor } from '../identity/caller.js';
import type { AddressRule } from '../outbound/outbound.address.js';
import { assertOutboundUrl } from '../outbound/outbound.url.js';
import { diff, recordAudit, type Changes } from '../audit/audit.record.js';
import { ATTEMPT_FIELDS, ENDPOINT_FIELDS } from './webhook.fields.js';
import { oldestRetained } from './webhook.maintenance.sql.js';
import type { WebhookCreate, WebhookDelivery, WebhookEndpoint, WebhookUpdate } from './webhook.schema.js';

// The webhook endpoints API (docs/webhooks.md): the caller's tenant's
// endpoints, their secret rotation, replay and attempt log. Every function
// takes the caller's tenant; each write locks the endpoint row first and
// writes its audit record in the same transaction. What the delivery worker
// runs is in webhook.delivery.sql.ts and webhook.maintenance.sql.ts.

/** How long the old secret keeps signing after a rotation. */
const ROTATION_OVERLAP = '24 hours';

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
 * committed from now on, not the history (a replay can reach back). Its url
 * is one the service may call (outbound.url.ts), as on every update.
 */
export async function createEndpoint(tx: Tx, actor: Actor, input: WebhookCreate, rule: AddressRule, secret: string): Promise<WebhookEndpoint> {
  assertOutboundUrl(rule, input.url, 'url');
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
export async function updateEndpoint(tx: Tx, actor: Actor, input: WebhookUpdate, rule: AddressRule): Promise<void> {
  assertOutboundUrl(rule, input.url, 'url');
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
  // The oldest is read over every tenant first (docs/scale-out.md#across-tenants-by-design); the update names its tenant.
  const oldest = await oldestRetained(tx);
  await tx`
    UPDATE webhook_endpoint SET cursor = GREATEST(${after}::bigint, COALESCE(${oldest}::bigint - 1, ${after}::bigint)),
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
