import type { Row } from 'postgres';
import { acrossTenants } from '../db/citus.js';
import type { Db, Tx } from '../db/database.js';
import { assert } from '../core/app.error.js';
import { checkIfMatch } from '../core/version.js';
import { fromRow, selectList, writeColumns } from '../db/fields.js';
import { pageOf, type PageQuery } from '../db/page.js';
import { diff, recordAudit, type Changes } from '../audit/audit.record.js';
import type { Caller } from '../identity/caller.js';
import type { AddressRule } from '../outbound/outbound.address.js';
import { tenantsReadableBy } from '../identity/scope.js';
import { BLOCKING_TENANT } from '../identity/tenant.state.js';
import { CONNECTION_FIELDS, SETTING_FIELDS } from './sso.fields.js';
import { assertConnectionUrls, assertJitDept, assertManagedTenant, parseConnectionId, type ConnectionKey } from './sso.rules.js';
import type { SsoConnectionCreate, SsoConnectionUpdate } from './sso.schema.js';

// Connections and the SSO policy (docs/sso.md): managed by the admins of the
// connection's tenant or of a tenant above it, and the superadmin (the scope
// rule, identity/scope.ts). Every statement names the connection's tenant.
// The rules a write checks are in sso.rules.ts, called first in its transaction.

/** A connection as read, without its redirect URI (the route adds it: it depends on PUBLIC_URL). */
export type StoredConnection = ReturnType<typeof toConnection>;

const COLUMNS = (sql: Db) => selectList(sql, 'c', CONNECTION_FIELDS);
const toConnection = (row: Row) => fromRow(row, CONNECTION_FIELDS);

const SETTINGS = Object.keys(SETTING_FIELDS) as (keyof typeof SETTING_FIELDS)[];

/**
 * What an audit record says of a connection: its settings (SETTING_FIELDS),
 * never its client secret, which that list does not hold. An update's record is
 * diff() of two of these, the audit room's rule for every entity's update
 * (which also drops any field named like a secret).
 */
const described = (c: Pick<StoredConnection, (typeof SETTINGS)[number]>): Changes => Object.fromEntries(SETTINGS.map((name) => [name, c[name]]));

function visible(db: Db, caller: Caller, key: ConnectionKey, lock = false) {
  return db`
    SELECT ${COLUMNS(db)} FROM sso_connection c JOIN sys_tenant t ON t.tenant_id = c.tenant_id
    WHERE c.tenant_id = ${key.tenantId} AND c.connection_id = ${key.connectionId} AND ${tenantsReadableBy(db, caller, 't')}
    ${lock ? db`FOR UPDATE OF c` : db``}`;
}

export async function getConnection(db: Db, caller: Caller, id: string): Promise<StoredConnection | undefined> {
  const key = parseConnectionId(id);
  if (!key) return undefined;
  const [row] = await visible(db, caller, key);
  return row && toConnection(row);
}

/**
 * Rule: a list covers what the caller manages, as the tenant and audit lists
 * do: the connections of its own tenant and of every tenant below it (the
 * superadmin: every tenant's); `tenantId`, one of those, narrows it to that
 * tenant's. Ordered by tenant, then oldest first.
 */
export async function listConnections(db: Db, caller: Caller, tenantId: string | undefined, page: PageQuery) {
  if (tenantId !== undefined) await assertManagedTenant(db, caller, tenantId);
  const from =
    tenantId !== undefined
      ? db`sso_connection c WHERE c.tenant_id = ${tenantId}`
      : db`sso_connection c JOIN sys_tenant t ON t.tenant_id = c.tenant_id WHERE ${tenantsReadableBy(db, caller, 't')}`;
  // Without tenantId, several tenants' by design (docs/scale-out.md#across-tenants-by-design).
  const read = (on: Db) => pageOf<Row>(on, { select: COLUMNS(on), from, orderBy: on`c.tenant_id, c.connection_id` }, page);
  const result = tenantId !== undefined ? await read(db) : await acrossTenants(db, read);
  return { total: result.total, rows: result.rows.map(toConnection) };
}

export async function createConnection(tx: Tx, caller: Caller, input: SsoConnectionCreate, rule: AddressRule): Promise<StoredConnection> {
  assertConnectionUrls(rule, input);
  const tenantId = input.tenantId ?? caller.tenantId;
  await assertManagedTenant(tx, caller, tenantId);
  await assertJitDept(tx, tenantId, input.jitDeptId);
  const [row] = await tx`
    INSERT INTO sso_connection ${tx({ ...writeColumns(CONNECTION_FIELDS, input), tenant_id: tenantId, client_secret: input.clientSecret, create_by: caller.userName })}
    RETURNING ${selectList(tx, 'sso_connection', CONNECTION_FIELDS)}`;
  const connection = toConnection(row!);
  await recordAudit(tx, caller, [{ action: 'sso.create', entityType: 'sso', entityId: connection.id, tenantId, changes: described(connection) }]);
  return connection;
}

/** Full replacement; the tenant never changes, and the client secret only when a new one is sent. */
export async function updateConnection(tx: Tx, caller: Caller, input: SsoConnectionUpdate, rule: AddressRule, ifMatch?: string): Promise<void> {
  assertConnectionUrls(rule, input);
  const key = parseConnectionId(input.id);
  const [locked] = key ? await visible(tx, caller, key, true) : [];
  assert(locked && key, 404, `SSO connection ${input.id} not found`);
  const before = toConnection(locked);
  await checkIfMatch(ifMatch, async () => before, `SSO connection ${input.id}`);
  await assertJitDept(tx, key.tenantId, input.jitDeptId);
  const columns = {
    ...writeColumns(CONNECTION_FIELDS, input),
    ...(input.clientSecret === undefined ? {} : { client_secret: input.clientSecret }),
    update_by: caller.userName,
  };
  const [row] = await tx`
    UPDATE sso_connection c SET ${tx(columns)}, update_time = now()
    WHERE c.tenant_id = ${key.tenantId} AND c.connection_id = ${key.connectionId}
    RETURNING ${COLUMNS(tx)}`;
  // A new secret is said only as replaced: never its value, old or new.
  const changes = {
    ...diff(described(before), described(toConnection(row!))),
    ...(input.clientSecret === undefined ? {} : { clientSecret: 'replaced' }),
  };
  await recordAudit(tx, caller, [{ action: 'sso.update', entityType: 'sso', entityId: input.id, tenantId: key.tenantId, changes }]);
}

/**
 * Deletes a connection with its links and the sign-ins in flight: its
 * attempts and links go by their foreign keys' cascade, its one-time codes
 * (which have none) here, so a code handed out before the delete signs
 * nobody in. Its people stay, and their sessions.
 */
export async function deleteConnection(tx: Tx, caller: Caller, id: string, ifMatch?: string): Promise<void> {
  const key = parseConnectionId(id);
  const [locked] = key ? await visible(tx, caller, key, true) : [];
  assert(locked && key, 404, `SSO connection ${id} not found`);
  const before = toConnection(locked);
  await checkIfMatch(ifMatch, async () => before, `SSO connection ${id}`);
  await tx`DELETE FROM sso_connection WHERE tenant_id = ${key.tenantId} AND connection_id = ${key.connectionId}`;
  await tx`DELETE FROM sso_code WHERE tenant_id = ${key.tenantId} AND connection_id = ${key.connectionId}`;
  await recordAudit(tx, caller, [{ action: 'sso.delete', entityType: 'sso', entityId: id, tenantId: key.tenantId, changes: described(before) }]);
}

export async function getPolicy(db: Db, caller: Caller, tenantId: string): Promise<{ ssoRequired: boolean }> {
  await assertManagedTenant(db, caller, tenantId);
  const [row] = await db<{ ssoRequired: boolean }[]>`SELECT sso_required AS "ssoRequired" FROM sso_policy WHERE tenant_id = ${tenantId}`;
  return { ssoRequired: row?.ssoRequired ?? false };
}

export async function setPolicy(tx: Tx, caller: Caller, tenantId: string, ssoRequired: boolean): Promise<void> {
  await assertManagedTenant(tx, caller, tenantId);
  const [before] = await tx<{ ssoRequired: boolean }[]>`
    SELECT sso_required AS "ssoRequired" FROM sso_policy WHERE tenant_id = ${tenantId} FOR UPDATE`;
  await tx`
    INSERT INTO sso_policy (tenant_id, sso_required, update_by) VALUES (${tenantId}, ${ssoRequired}, ${caller.userName})
    ON CONFLICT (tenant_id) DO UPDATE SET sso_required = EXCLUDED.sso_required, update_by = EXCLUDED.update_by, update_time = EXCLUDED.update_time`;
  const changes = { ssoRequired: { before: before?.ssoRequired ?? false, after: ssoRequired } };
  await recordAudit(tx, caller, [{ action: 'sso.policy', entityType: 'sso', entityId: tenantId, tenantId, changes }]);
}

/**
 * What a login page may know without a token: whether the tenant insists on
 * SSO, and its enabled connections. An unknown or suspended tenant answers
 * the same shape, empty, so the page cannot tell the two apart.
 */
export async function discoverConnections(db: Db, tenantId: string): Promise<{ ssoRequired: boolean; connections: { id: string; name: string }[] }> {
  const [tenant] = await db<{ blocked: boolean; ssoRequired: boolean | null }[]>`
    SELECT b.tenant_id IS NOT NULL AS blocked, p.sso_required AS "ssoRequired"
    FROM sys_tenant t ${BLOCKING_TENANT(db)}
    LEFT JOIN sso_policy p ON p.tenant_id = t.tenant_id
    WHERE t.tenant_id = ${tenantId}`;
  if (!tenant || tenant.blocked) return { ssoRequired: false, connections: [] };
  const rows = await db<{ n: number; name: string }[]>`
    SELECT connection_id AS n, name FROM sso_connection WHERE tenant_id = ${tenantId} AND status = '0' ORDER BY connection_id`;
  return { ssoRequired: tenant.ssoRequired ?? false, connections: rows.map((r) => ({ id: `${tenantId}-${r.n}`, name: r.name })) };
}
