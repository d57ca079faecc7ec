import type { Db, Tx } from '../db/database.js';
import { assert } from '../core/app.error.js';
import { checkIfMatch } from '../core/version.js';
import { parseInternalId } from '../core/ids.js';
import { today } from '../core/time.js';
import { isSuperadmin, type Actor, type Caller } from '../identity/caller.js';
import { isStrictlyBelow, tenantsReadableBy } from '../identity/scope.js';
import { diff, recordAudit, values, type RowImage } from '../audit/audit.record.js';
import { PLATFORM_TENANT } from '../identity/roles.js';
import { createDept } from '../depts/dept.sql.js';
import { containing } from '../db/sql.helpers.js';
import { createUser } from '../users/user.sql.js';
import { revokeTenantSubtreeSessions } from '../auth/auth.sql.js';
import type { Tenant, TenantCreate, TenantListQuery, TenantUpdate } from './tenant.schema.js';
import { PACKAGE_FIELDS, QUOTA_FIELDS, RULE_FIELDS, TENANT_FIELDS } from './tenant.fields.js';
import { AUDIT_FIELDS, fromRow, selectList, writeColumns } from '../db/fields.js';
import { NAME_MAX } from '../core/limits.js';

export const MAX_MENU_IDS = 10_000;

/**
 * "1, 2,3, 2" -> "1,2,3": positive integers, duplicates dropped, first
 * occurrence order kept. Anything else is a 400 naming the bad entry.
 */
export function normaliseMenuIds(raw: string): string {
  if (raw.trim() === '') return '';
  const ids = raw.split(',').map((part) => part.trim());
  assert(ids.length <= MAX_MENU_IDS, 400, `packageBo.menuIds may list at most ${MAX_MENU_IDS} ids`);
  for (const id of ids) {
    assert(/^[1-9][0-9]{0,18}$/.test(id), 400, `packageBo.menuIds must be positive integers separated by commas; "${id}" is not`);
  }
  return [...new Set(ids)].join(',');
}

// ---------------------------------------------------------------- row <-> DTO (from the field lists in tenant.fields.ts)

const READ_FIELDS = { ...TENANT_FIELDS, ...PACKAGE_FIELDS, ...QUOTA_FIELDS, ...RULE_FIELDS, ...AUDIT_FIELDS };

const COLUMNS = (sql: Db) => selectList(sql, 't', READ_FIELDS);

/** The row `t` for the audit record; the 19-digit id as text, since a JSON number would lose digits. */
const IMAGE = (sql: Db) => sql`to_jsonb(t) || jsonb_build_object('id', t.id::text) AS image`;

const toTenant = (row: Record<string, unknown>): Tenant => ({
  ...fromRow(row, TENANT_FIELDS),
  packageBo: fromRow(row, PACKAGE_FIELDS),
  quotaBo: fromRow(row, QUOTA_FIELDS),
  ruleBo: fromRow(row, RULE_FIELDS),
  ...fromRow(row, AUDIT_FIELDS),
});

/** The writable columns of a create or a full replacement: omitted fields get their defaults. */
function writableColumns(input: TenantCreate | TenantUpdate) {
  assert(
    !input.startTime || !input.endTime || input.startTime <= input.endTime,
    400,
    `startTime ${input.startTime} is after endTime ${input.endTime}`,
  );
  return {
    ...writeColumns(TENANT_FIELDS, input),
    ...writeColumns(PACKAGE_FIELDS, { menuIds: normaliseMenuIds(input.packageBo?.menuIds ?? '') }),
    ...writeColumns(QUOTA_FIELDS, input.quotaBo ?? {}),
    ...writeColumns(RULE_FIELDS, input.ruleBo ?? {}),
  };
}

// ---------------------------------------------------------------- scope

/** Rule: the live tenants `t` a caller sees (identity/scope.ts); everything else answers 404. */
const liveTenantsVisibleTo = (sql: Db, caller: Caller) => sql`t.del_flag = '0' AND ${tenantsReadableBy(sql, caller, 't')}`;

/** Rule: only a strict ancestor's admin (or superadmin) changes a tenant, and never the platform tenant. */
function assertMayChange(caller: Caller, target: { tenantId: string; ancestors: string }, verb: string): void {
  assert(target.tenantId !== PLATFORM_TENANT, 403, `The platform tenant ${PLATFORM_TENANT} cannot be ${verb} through the API`);
  assert(
    isSuperadmin(caller) || isStrictlyBelow(target.ancestors, caller.tenantId),
    403,
    `Only administrators of a tenant above ${target.tenantId} may change it`,
  );
}

// ---------------------------------------------------------------- reads

export async function getTenant(sql: Db, caller: Caller, id: string): Promise<Tenant | undefined> {
  const [row] = await sql<Record<string, unknown>[]>`
    SELECT ${COLUMNS(sql)} FROM sys_tenant t WHERE t.id = ${parseInternalId(id, 'Tenant')}::bigint AND ${liveTenantsVisibleTo(sql, caller)}`;
  return row && toTenant(row);
}

export async function listTenants(sql: Db, caller: Caller, query: TenantListQuery): Promise<{ total: number; rows: Tenant[] }> {
  const where = sql`
    ${liveTenantsVisibleTo(sql, caller)}
    ${query.tenantName !== undefined ? sql`AND t.tenant_name LIKE ${containing(query.tenantName)}` : sql``}
    ${query.status !== undefined ? sql`AND t.status = ${query.status}` : sql``}
    ${query.tenantParent !== undefined ? sql`AND t.tenant_parent = ${query.tenantParent}` : sql``}`;
  const [count] = await sql<{ total: number }[]>`SELECT count(*) AS total FROM sys_tenant t WHERE ${where}`;
  const rows = await sql<Record<string, unknown>[]>`
    SELECT ${COLUMNS(sql)} FROM sys_tenant t WHERE ${where}
    ORDER BY t.id
    LIMIT ${query.pageSize} OFFSET ${(query.pageNum - 1) * query.pageSize}`;
  return { total: count!.total, rows: rows.map(toTenant) };
}

// ---------------------------------------------------------------- writes (each inside one transaction)

/**
 * Creates a child tenant under `tenantParent` (default: the caller's own),
 * and with username+password its root department and first admin, all in
 * the caller's transaction. The parent row is share-locked so a concurrent
 * delete of the parent waits for this create (and then sees the child).
 */
export async function createTenant(tx: Tx, caller: Caller, input: TenantCreate): Promise<string> {
  const parentCode = input.tenantParent ?? caller.tenantId;
  assert((input.username === undefined) === (input.password === undefined), 400, 'username and password are sent together or not at all');
  const [parent] = await tx<{ tenantId: string; ancestors: string }[]>`
    SELECT t.tenant_id AS "tenantId", t.ancestors FROM sys_tenant t
    WHERE t.tenant_id = ${parentCode} AND ${liveTenantsVisibleTo(tx, caller)}
    FOR SHARE`;
  if (isSuperadmin(caller)) {
    assert(parent, 400, `tenantParent ${parentCode} is not a live tenant`);
  } else {
    // Same answer whether or not the tenant exists: nothing outside the caller's scope is revealed.
    assert(parent && caller.role === 'admin', 403, `tenantParent ${parentCode} is not your tenant or one below it`);
  }
  const columns = writableColumns(input);
  const [row] = await tx<{ id: string; tenantId: string; image: RowImage }[]>`
    INSERT INTO sys_tenant ${tx({
      ...columns,
      tenant_parent: parent.tenantId,
      ancestors: parent.ancestors === '' ? parent.tenantId : `${parent.ancestors},${parent.tenantId}`,
      create_by: caller.userName,
    })}
    RETURNING id::text AS id, tenant_id AS "tenantId", to_jsonb(sys_tenant) || jsonb_build_object('id', id::text) AS image`;
  const created = row!;
  const changes = values(created.image);
  await recordAudit(tx, caller, [{ action: 'tenant.create', entityType: 'tenant', entityId: created.id, tenantId: created.tenantId, changes }]);

  if (input.username !== undefined && input.password !== undefined) {
    // Written in the new tenant by the caller, who belongs to a tenant above it.
    const actor: Actor = { ...caller, tenantId: created.tenantId, userTenantId: caller.tenantId };
    const deptId = await createDept(tx, actor, { parentId: 0, deptName: [...input.companyName.trim()].slice(0, NAME_MAX).join('') });
    await createUser(tx, actor, { userName: input.username, password: input.password, roles: ['admin'], deptId, nickName: input.username });
  }
  return created.id;
}

interface Period {
  status: string;
  startTime?: string | null;
  endTime?: string | null;
}

/** Rule: a tenant is live today when enabled and inside its service period (dates in TZ). */
function liveToday(p: Period): boolean {
  const day = today();
  return p.status === '0' && (!p.startTime || p.startTime <= day) && (!p.endTime || day <= p.endTime);
}

/** Full replacement. tenantId and tenantParent are fixed for life: repeating them is fine, changing them is 400. */
export async function updateTenant(tx: Tx, caller: Caller, input: TenantUpdate, ifMatch?: string): Promise<void> {
  const [target] = await tx<({ tenantId: string; tenantParent: string | null; ancestors: string; image: RowImage } & Period)[]>`
    SELECT t.tenant_id AS "tenantId", t.tenant_parent AS "tenantParent", t.ancestors,
           t.status, t.start_time::text AS "startTime", t.end_time::text AS "endTime", ${IMAGE(tx)} FROM sys_tenant t
    WHERE t.id = ${parseInternalId(input.id, 'Tenant')}::bigint AND ${liveTenantsVisibleTo(tx, caller)}
    FOR UPDATE`;
  assert(target, 404, `Tenant ${input.id} not found`);
  assertMayChange(caller, target, 'updated');
  await checkIfMatch(ifMatch, () => getTenant(tx, caller, input.id), `Tenant ${input.id}`);
  assert(input.tenantId === undefined || input.tenantId === target.tenantId, 400, `tenantId cannot change (it is ${target.tenantId})`);
  assert(
    input.tenantParent === undefined || input.tenantParent === target.tenantParent,
    400,
    `tenantParent cannot change (it is ${target.tenantParent})`,
  );
  const [after] = await tx<{ image: RowImage }[]>`
    UPDATE sys_tenant t SET ${tx({ ...writableColumns(input), update_by: caller.userName })}, update_time = now()
    WHERE id = ${input.id}::bigint
    RETURNING ${IMAGE(tx)}`;
  // A write that suspends the subtree (disable, period moved off today) ends
  // its sessions; so does one that lifts a suspension, which covers an expiry
  // (no write happens when a period runs out): tokens from before never return.
  if (!liveToday(target) || !liveToday({ status: input.status ?? '0', startTime: input.startTime, endTime: input.endTime })) {
    await revokeTenantSubtreeSessions(tx, target.tenantId);
  }
  const changes = diff(target.image, after!.image);
  await recordAudit(tx, caller, [{ action: 'tenant.update', entityType: 'tenant', entityId: input.id, tenantId: target.tenantId, changes }]);
}

/** Logical delete, refused while live child tenants exist. */
export async function deleteTenant(tx: Tx, caller: Caller, id: string, ifMatch?: string): Promise<void> {
  const [target] = await tx<{ tenantId: string; ancestors: string }[]>`
    SELECT t.tenant_id AS "tenantId", t.ancestors FROM sys_tenant t
    WHERE t.id = ${parseInternalId(id, 'Tenant')}::bigint AND ${liveTenantsVisibleTo(tx, caller)}
    FOR UPDATE`;
  assert(target, 404, `Tenant ${id} not found`);
  assertMayChange(caller, target, 'deleted');
  await checkIfMatch(ifMatch, () => getTenant(tx, caller, id), `Tenant ${id}`);
  const [child] = await tx<{ tenantId: string }[]>`
    SELECT tenant_id AS "tenantId" FROM sys_tenant WHERE tenant_parent = ${target.tenantId} AND del_flag = '0' LIMIT 1`;
  assert(!child, 409, `Tenant ${target.tenantId} has live child tenant ${child?.tenantId}; delete it first`);
  const [deleted] = await tx<{ image: RowImage }[]>`
    UPDATE sys_tenant t SET del_flag = '2', update_by = ${caller.userName}, update_time = now() WHERE id = ${id}::bigint
    RETURNING ${IMAGE(tx)}`;
  await revokeTenantSubtreeSessions(tx, target.tenantId);
  await recordAudit(tx, caller, [
    { action: 'tenant.delete', entityType: 'tenant', entityId: id, tenantId: target.tenantId, changes: values(deleted!.image) },
  ]);
}
