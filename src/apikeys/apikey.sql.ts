import type { PendingQuery, Row } from 'postgres';
import type { Db, Tx } from '../db/database.js';
import { pageOf, type PageQuery } from '../db/page.js';
import { assert } from '../core/app.error.js';
import { today } from '../core/time.js';
import { fromRow, selectList } from '../db/fields.js';
import { KEY_FIELDS } from './apikey.fields.js';
import type { Actor } from '../identity/caller.js';
import { recordAudit, type Changes } from '../audit/audit.record.js';
import { BLOCKING_COLUMNS, BLOCKING_TENANT, tenantProblem, type TenantState } from '../identity/tenant.state.js';
import type { ApiKey, ApiKeyCreate, ApiKeyCreated } from './apikey.schema.js';

// API keys (docs/security.md#api-keys): managed by a tenant's admins, looked
// up by their hash on every request that sends one. Every statement names the
// tenant: the caller's, or the one the key carries (apikey.token.ts).

type Fragment = PendingQuery<Row[]>;

const COLUMNS = (sql: Db) => selectList(sql, 'k', KEY_FIELDS);
const toApiKey = (row: Row): ApiKey => fromRow(row, KEY_FIELDS);

/** What an audit record says of a key: never the key or its hash. */
const described = (k: Pick<ApiKey, 'name' | 'role' | 'expiresAt'>): Changes => ({ name: k.name, role: k.role, expiresAt: k.expiresAt });

export async function getApiKey(sql: Db, tenantId: string, id: number): Promise<ApiKey | undefined> {
  const [row] = await sql`
    SELECT ${COLUMNS(sql)} FROM sys_api_key k WHERE k.tenant_id = ${tenantId} AND k.key_id = ${id} AND k.revoke_time IS NULL`;
  return row && toApiKey(row);
}

/** The tenant's live (unrevoked) keys, expired ones included, oldest first. */
export async function listApiKeys(sql: Db, tenantId: string, page: PageQuery): Promise<{ total: number; rows: ApiKey[] }> {
  const result = await pageOf<Row>(
    sql,
    { select: COLUMNS(sql), from: sql`sys_api_key k WHERE k.tenant_id = ${tenantId} AND k.revoke_time IS NULL`, orderBy: sql`k.key_id` },
    page,
  );
  return { total: result.total, rows: result.rows.map(toApiKey) };
}

/** Rule: a key's last day is today or later; a key that is dead on arrival is a mistake. */
export async function createApiKey(tx: Tx, actor: Actor, input: ApiKeyCreate, hash: Buffer): Promise<Omit<ApiKeyCreated, 'key'>> {
  const expiresAt = input.expiresAt ?? null;
  assert(expiresAt === null || expiresAt >= today(), 400, `expiresAt ${expiresAt} has passed; a key's last day is today or later`);
  // Read from a CTE: Citus allows no STABLE function in a distributed write's RETURNING.
  const [row] = await tx`
    WITH k AS (
      INSERT INTO sys_api_key (tenant_id, name, role, key_hash, expires_at, create_by)
      VALUES (${actor.tenantId}, ${input.name}, ${input.role}, ${hash}, ${expiresAt}::date, ${actor.userName})
      RETURNING *)
    SELECT ${COLUMNS(tx)} FROM k`;
  const { id, name, role, createTime } = toApiKey(row!);
  await recordAudit(tx, actor, [{ action: 'apikey.create', entityType: 'apikey', entityId: id, changes: described({ ...input, expiresAt }) }]);
  return { id, name, role, expiresAt, createTime };
}

/** Revokes a live key for good; 404 when the caller's tenant has no live key of that id. */
export async function revokeApiKey(tx: Tx, actor: Actor, id: number): Promise<void> {
  const [row] = await tx`
    WITH k AS (
      UPDATE sys_api_key k SET revoke_time = now(), revoke_by = ${actor.userName}
      WHERE k.tenant_id = ${actor.tenantId} AND k.key_id = ${id} AND k.revoke_time IS NULL
      RETURNING k.*)
    SELECT ${COLUMNS(tx)} FROM k`;
  assert(row, 404, `API key ${id} not found`);
  await recordAudit(tx, actor, [{ action: 'apikey.delete', entityType: 'apikey', entityId: id, changes: described(toApiKey(row)) }]);
}

/** A key as the auth plugin judges it: live or not, its tenant chain's state. */
export interface FoundApiKey extends TenantState {
  id: number;
  name: string;
  role: 'admin' | 'user';
  expiresAt: string | null;
  revoked: boolean;
  lastUsedTime: Date | null;
}

/** A key with its tenant chain's state: the one read behind every judgement of a key. */
function findKey(sql: Db, tenantId: string, which: Fragment) {
  return sql<FoundApiKey[]>`
    SELECT k.tenant_id AS "tenantId", k.key_id::int AS id, k.name, k.role, k.expires_at::text AS "expiresAt",
      k.revoke_time IS NOT NULL AS revoked, k.last_used_time AS "lastUsedTime", ${BLOCKING_COLUMNS(sql)}
    FROM sys_api_key k JOIN sys_tenant t ON t.tenant_id = k.tenant_id
    ${BLOCKING_TENANT(sql)}
    WHERE k.tenant_id = ${tenantId} AND ${which}`;
}

/** The key with this hash in `tenantId`, for every request that sends it (through the session cache). */
export async function findApiKey(sql: Db, tenantId: string, hash: Buffer): Promise<FoundApiKey | undefined> {
  const [row] = await findKey(sql, tenantId, sql`k.key_hash = ${hash}`);
  return row;
}

/**
 * `lastUsedTime` is kept to the minute, for a key that was honoured: written
 * after the key is admitted, and only when the minute has changed, so a busy
 * key costs one small write a minute.
 */
export async function touchApiKey(sql: Db, tenantId: string, id: number): Promise<void> {
  await sql`
    UPDATE sys_api_key SET last_used_time = date_trunc('minute', now())
    WHERE tenant_id = ${tenantId} AND key_id = ${id} AND (last_used_time IS NULL OR last_used_time < date_trunc('minute', now()))`;
}

/** Whether `lastUsedTime` is older than the current minute. */
export function usedBeforeThisMinute(key: Pick<FoundApiKey, 'lastUsedTime'>, now = Date.now()): boolean {
  return key.lastUsedTime === null || key.lastUsedTime.getTime() < now - (now % 60_000);
}

/** Why this key may not act now, or null when it may. Judged on every request, like a token (the date is not cached). */
export function apiKeyProblem(key: Pick<FoundApiKey, 'revoked' | 'expiresAt'>): string | null {
  if (key.revoked) return 'the API key has been revoked';
  if (key.expiresAt !== null && key.expiresAt < today()) return `the API key expired on ${key.expiresAt}`;
  return null;
}

/** Whether the key behind a caller is still honoured: live, unexpired, its tenant chain live (for the long-lived audit stream). */
export async function apiKeyIsLive(sql: Db, tenantId: string, id: number): Promise<boolean> {
  const [row] = await findKey(sql, tenantId, sql`k.key_id = ${id}`);
  return Boolean(row && !apiKeyProblem(row) && !tenantProblem(row));
}
