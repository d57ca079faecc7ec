import type { Db, Tx } from '../db/database.js';
import { assert } from '../core/app.error.js';
import { parseInternalId } from '../core/ids.js';
import { today } from '../core/time.js';
import { isSuperadmin, type Caller } from '../identity/caller.js';
import { PLATFORM_TENANT } from '../identity/roles.js';
import { isStrictlyBelow, tenantsReadableBy } from '../identity/scope.js';
import type { RowImage } from '../audit/audit.record.js';
import type { TenantCreate, TenantUpdate } from './tenant.schema.js';

// The tenant rules (docs/api-rules.md#tenants), one function each, with the
// SQL that checks it. The writes in tenant.sql.ts are lists of these calls.

/** Rule: the live tenants `t` a caller sees (identity/scope.ts); everything else answers 404. */
export const liveTenantsVisibleTo = (sql: Db, caller: Caller) => sql`t.del_flag = '0' AND ${tenantsReadableBy(sql, caller, 't')}`;

/** The row `t` for the audit record; the 19-digit ids as text, since a JSON number would lose digits. */
export const TENANT_IMAGE = (sql: Db) => sql`to_jsonb(t) || jsonb_build_object('id', t.id::text, 'package_id', t.package_id::text) AS image`;

/** Rule: a service period starts no later than it ends. */
export function assertPeriodInOrder(input: Pick<TenantCreate, 'startTime' | 'endTime'>): void {
  assert(
    !input.startTime || !input.endTime || input.startTime <= input.endTime,
    400,
    `startTime ${input.startTime} is after endTime ${input.endTime}`,
  );
}

/** Rule: a new tenant's first admin needs both a username and a password, or neither is sent. */
export function assertCredentialsPaired(input: TenantCreate): void {
  assert((input.username === undefined) === (input.password === undefined), 400, 'username and password are sent together or not at all');
}

/**
 * Rule: a new tenant goes under a live tenant the caller sees: for
 * superadmin any (400 when there is none), for an admin its own or one
 * below (403 otherwise, whether or not that tenant exists: nothing outside
 * the caller's scope is revealed). The parent row is share-locked, so a
 * concurrent delete of the parent waits for this create and then sees the child.
 */
export async function parentForNewTenant(tx: Tx, caller: Caller, parentCode: string) {
  const [parent] = await tx<{ tenantId: string; ancestors: string }[]>`
    SELECT t.tenant_id AS "tenantId", t.ancestors FROM sys_tenant t
    WHERE t.tenant_id = ${parentCode} AND ${liveTenantsVisibleTo(tx, caller)}
    FOR SHARE`;
  if (isSuperadmin(caller)) assert(parent, 400, `tenantParent ${parentCode} is not a live tenant`);
  else assert(parent && caller.role === 'admin', 403, `tenantParent ${parentCode} is not your tenant or one below it`);
  return parent;
}

/** A tenant's ancestor path for a child of `parent`: the parent's path followed by the parent's code. */
export const pathUnder = (parent: { tenantId: string; ancestors: string }) =>
  parent.ancestors === '' ? parent.tenantId : `${parent.ancestors},${parent.tenantId}`;

/** The state of a tenant that decides whether its users may act today. */
export interface Period {
  status: string;
  startTime?: string | null;
  endTime?: string | null;
}

/** The live tenant a write is about to change, row-locked, as it is now (404 when the caller cannot see it). */
export async function lockTargetTenant(tx: Tx, caller: Caller, id: string) {
  const [target] = await tx<
    ({ tenantId: string; tenantParent: string | null; ancestors: string; packageId: string | null; image: RowImage } & Period)[]
  >`
    SELECT t.tenant_id AS "tenantId", t.tenant_parent AS "tenantParent", t.ancestors, t.package_id::text AS "packageId",
           t.status, t.start_time::text AS "startTime", t.end_time::text AS "endTime",
           ${TENANT_IMAGE(tx)}
    FROM sys_tenant t
    WHERE t.id = ${parseInternalId(id, 'Tenant')}::bigint AND ${liveTenantsVisibleTo(tx, caller)}
    FOR UPDATE`;
  assert(target, 404, `Tenant ${id} not found`);
  return target;
}

/** Rule: only a strict ancestor's admin (or superadmin) changes a tenant, and never the platform tenant. */
export function assertMayChange(caller: Caller, target: { tenantId: string; ancestors: string }, verb: string): void {
  assert(target.tenantId !== PLATFORM_TENANT, 403, `The platform tenant ${PLATFORM_TENANT} cannot be ${verb} through the API`);
  assert(
    isSuperadmin(caller) || isStrictlyBelow(target.ancestors, caller.tenantId),
    403,
    `Only administrators of a tenant above ${target.tenantId} may change it`,
  );
}

/** Rule: tenantId and tenantParent are fixed for life: repeating them is fine, changing them is 400. */
export function assertLineageUnchanged(input: TenantUpdate, target: { tenantId: string; tenantParent: string | null }): void {
  assert(input.tenantId === undefined || input.tenantId === target.tenantId, 400, `tenantId cannot change (it is ${target.tenantId})`);
  assert(
    input.tenantParent === undefined || input.tenantParent === target.tenantParent,
    400,
    `tenantParent cannot change (it is ${target.tenantParent})`,
  );
}

/** Rule: a tenant is live today when enabled and inside its service period (dates in TZ). */
function liveToday(p: Period): boolean {
  const day = today();
  return p.status === '0' && (!p.startTime || p.startTime <= day) && (!p.endTime || day <= p.endTime);
}

/**
 * Rule: a write that suspends the subtree (disable, period moved off today)
 * ends its sessions; so does one that lifts a suspension, which covers an
 * expiry (no write happens when a period runs out): tokens from before
 * never return.
 */
export function endsSessions(before: Period, after: Period): boolean {
  return !liveToday(before) || !liveToday(after);
}

/** Rule (deletes): a tenant with a live child tenant cannot be deleted; the child is named. */
export async function assertNoLiveChildTenant(tx: Tx, tenantId: string): Promise<void> {
  const [child] = await tx<{ tenantId: string }[]>`
    SELECT tenant_id AS "tenantId" FROM sys_tenant WHERE tenant_parent = ${tenantId} AND del_flag = '0' LIMIT 1`;
  assert(!child, 409, `Tenant ${tenantId} has live child tenant ${child?.tenantId}; delete it first`);
}
