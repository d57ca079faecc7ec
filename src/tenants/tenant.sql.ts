import type { Db, Tx } from '../db/database.js';
import { serializePlatformWrites } from '../db/citus.js';
import { checkIfMatch } from '../core/version.js';
import { cursorId, parseInternalId } from '../core/ids.js';
import { DEPT_NAME_MAX } from '../core/limits.js';
import { isSuperadmin, type Actor, type Caller } from '../identity/caller.js';
import { diff, recordAudit, values, type RowImage } from '../audit/audit.record.js';
import { revokeTenantSubtreeCredentials } from '../auth/auth.sql.js';
import { createDept } from '../depts/dept.sql.js';
import { createUser } from '../users/user.sql.js';
import { contains } from '../db/sql.helpers.js';
import { AUDIT_FIELDS, fromRow, selectList, writeColumns } from '../db/fields.js';
import { keyedPageOf, type Fragment } from '../db/page.js';
import { livePageByNumber } from './tenant.pages.js';
import { keepNameGrams, rareGramOf } from './tenant.grams.js';
import type { Tenant, TenantCreate, TenantListQuery, TenantUpdate } from './tenant.schema.js';
import { PACKAGE_CHOICE_FIELDS, QUOTA_FIELDS, RULE_FIELDS, TENANT_FIELDS } from './tenant.fields.js';
import {
  assertCredentialsPaired,
  assertLineageUnchanged,
  assertMayChange,
  assertNoLiveChildTenant,
  assertPeriodInOrder,
  endsSessions,
  liveTenantsVisibleTo,
  lockTargetTenant,
  parentForNewTenant,
  pathUnder,
  TENANT_IMAGE,
} from './tenant.rules.js';
import { packageTaken } from '../packages/package.rules.js';
import { bumpTenantListVersion } from '../identity/tenant.version.js';

// ---------------------------------------------------------------- row <-> DTO (from the field lists in tenant.fields.ts)

const READ_FIELDS = { ...TENANT_FIELDS, ...PACKAGE_CHOICE_FIELDS, ...QUOTA_FIELDS, ...RULE_FIELDS, ...AUDIT_FIELDS };

const COLUMNS = (sql: Db) => selectList(sql, 't', READ_FIELDS);

const toTenant = (row: Record<string, unknown>): Tenant => ({
  ...fromRow(row, TENANT_FIELDS),
  packageBo: fromRow(row, PACKAGE_CHOICE_FIELDS),
  quotaBo: fromRow(row, QUOTA_FIELDS),
  ruleBo: fromRow(row, RULE_FIELDS),
  ...fromRow(row, AUDIT_FIELDS),
});

/**
 * The writable columns of a create or a full replacement: omitted fields get
 * their defaults. `currentPackage`: the package the tenant is on now, which
 * it may keep even once disabled (packageTaken).
 */
async function writableColumns(tx: Tx, input: TenantCreate | TenantUpdate, currentPackage: string | null = null) {
  assertPeriodInOrder(input);
  return {
    ...writeColumns(TENANT_FIELDS, input),
    ...writeColumns(PACKAGE_CHOICE_FIELDS, await packageTaken(tx, input.packageBo, currentPackage)),
    ...writeColumns(QUOTA_FIELDS, input.quotaBo ?? {}),
    ...writeColumns(RULE_FIELDS, input.ruleBo ?? {}),
  };
}

// ---------------------------------------------------------------- reads

export async function getTenant(sql: Db, caller: Caller, id: string): Promise<Tenant | undefined> {
  const [row] = await sql<Record<string, unknown>[]>`
    SELECT ${COLUMNS(sql)} FROM sys_tenant t WHERE t.id = ${parseInternalId(id, 'Tenant')}::bigint AND ${liveTenantsVisibleTo(sql, caller)}`;
  return row && toTenant(row);
}

export async function listTenants(sql: Db, caller: Caller, query: TenantListQuery): Promise<{ total: number; totalExact: boolean; rows: Tenant[] }> {
  // A needle with a trigram few tenants hold: only those tenants are tested (tenant.grams.ts).
  const rareGram = query.tenantName !== undefined ? await rareGramOf(sql, query.tenantName) : undefined;
  const from = sql`
    sys_tenant t WHERE ${liveTenantsVisibleTo(sql, caller)}
    ${query.tenantName !== undefined ? sql`AND ${contains(sql, sql`t.tenant_name`, query.tenantName)}` : sql``}
    ${rareGram !== undefined ? sql`AND t.id IN (SELECT n.id FROM sys_tenant_name_gram n WHERE n.gram = ${rareGram})` : sql``}
    ${query.status !== undefined ? sql`AND t.status = ${query.status}` : sql``}
    ${query.tenantParent !== undefined ? sql`AND t.tenant_parent = ${query.tenantParent}` : sql``}
    ${query.after !== undefined ? sql`AND t.id > (SELECT ${cursorId(query.after)}::bigint)` : sql``}`;
  // The walk over the ids is answered by an index alone: sys_tenant_live_id_idx without a filter
  // (sql/016_tenant_live_ids.sql), sys_tenant_live_list_idx with one (sql/012_list_indexes.sql);
  // after a cursor it starts at the cursor, so a page far down the list costs what the first does. The cursor is
  // a subquery's value, which the planner does not see: as a bare parameter, a cursor near the end of a big list
  // priced each custom plan below the kept one, so every page by such a cursor was planned anew, which cost more
  // than the walk (docs/benchmark.md#reads-across-10000-tenants); now every plan is priced alike and one is kept.
  const row = (k: Fragment) => sql`SELECT ${COLUMNS(sql)} FROM sys_tenant t WHERE t.id = ${k}`;
  // The platform's pages past the first without a filter: from the live ids kept in memory (tenant.pages.ts).
  const unfiltered = query.tenantName === undefined && query.status === undefined && query.tenantParent === undefined && query.after === undefined;
  const kept = isSuperadmin(caller) && unfiltered && query.pageNum > 1 ? await livePageByNumber(sql, row, query) : undefined;
  const page = kept ?? (await keyedPageOf<Record<string, unknown>>(sql, { key: sql`t.id`, from: () => from, row }, query));
  return { ...page, rows: page.rows.map(toTenant) };
}

// ---------------------------------------------------------------- writes (each inside one transaction)

/**
 * Creates a child tenant under `tenantParent` (default: the caller's own),
 * and with username+password its root department and first admin, all in
 * the caller's transaction.
 */
export async function createTenant(tx: Tx, caller: Caller, input: TenantCreate): Promise<string> {
  await serializePlatformWrites(tx);
  assertCredentialsPaired(input);
  const parent = await parentForNewTenant(tx, caller, input.tenantParent ?? caller.tenantId);
  const columns = await writableColumns(tx, input);
  const [row] = await tx<{ id: string; tenantId: string; image: RowImage }[]>`
    WITH t AS (
      INSERT INTO sys_tenant ${tx({ ...columns, tenant_parent: parent.tenantId, ancestors: pathUnder(parent), create_by: caller.userName })}
      RETURNING *)
    SELECT t.id::text AS id, t.tenant_id AS "tenantId", ${TENANT_IMAGE(tx)} FROM t`;
  const created = row!;
  await keepNameGrams(tx, created.id, (created.image.tenant_name as string | null) ?? null, false);
  await bumpTenantListVersion(tx);
  const changes = values(created.image);
  await recordAudit(tx, caller, [{ action: 'tenant.create', entityType: 'tenant', entityId: created.id, tenantId: created.tenantId, changes }]);
  if (input.username !== undefined && input.password !== undefined) {
    await provisionFirstAdmin(tx, { ...caller, tenantId: created.tenantId, userTenantId: caller.tenantId }, input.companyName, {
      username: input.username,
      password: input.password,
    });
  }
  return created.id;
}

/**
 * A new tenant's root department (named after its company, trimmed; a
 * companyName's 100 characters fit a department name, and the cut keeps
 * it so should either limit change) and its first admin, written in the new
 * tenant by `actor`, who belongs to a tenant above it.
 */
async function provisionFirstAdmin(tx: Tx, actor: Actor, companyName: string, login: { username: string; password: string }) {
  const deptId = await createDept(tx, actor, { parentId: 0, deptName: [...companyName.trim()].slice(0, DEPT_NAME_MAX).join('') });
  await createUser(tx, actor, { userName: login.username, password: login.password, roles: ['admin'], deptId, nickName: login.username });
}

/** Full replacement; omitted fields return to their defaults. */
export async function updateTenant(tx: Tx, caller: Caller, input: TenantUpdate, ifMatch?: string): Promise<void> {
  await serializePlatformWrites(tx);
  const target = await lockTargetTenant(tx, caller, input.id);
  assertMayChange(caller, target, 'updated');
  await checkIfMatch(ifMatch, () => getTenant(tx, caller, input.id), `Tenant ${input.id}`);
  assertLineageUnchanged(input, target);
  const columns = await writableColumns(tx, input, target.packageId);
  // The image from a CTE: Citus allows no STABLE function (to_jsonb) in a write's RETURNING.
  const [after] = await tx<{ image: RowImage }[]>`
    WITH t AS (
      UPDATE sys_tenant t SET ${tx({ ...columns, update_by: caller.userName })}, update_time = now()
      WHERE id = ${input.id}::bigint
      RETURNING t.*)
    SELECT ${TENANT_IMAGE(tx)} FROM t`;
  const name = (after!.image.tenant_name as string | null) ?? null;
  if (name !== ((target.image.tenant_name as string | null) ?? null)) await keepNameGrams(tx, input.id, name, true);
  await bumpTenantListVersion(tx);
  if (endsSessions(target, { status: input.status ?? '0', startTime: input.startTime, endTime: input.endTime })) {
    await revokeTenantSubtreeCredentials(tx, target.tenantId, caller.userName);
  }
  const changes = diff(target.image, after!.image);
  await recordAudit(tx, caller, [{ action: 'tenant.update', entityType: 'tenant', entityId: input.id, tenantId: target.tenantId, changes }]);
}

/** Logical delete, refused while live child tenants exist; the subtree's sessions and API keys end. */
export async function deleteTenant(tx: Tx, caller: Caller, id: string, ifMatch?: string): Promise<void> {
  await serializePlatformWrites(tx);
  const target = await lockTargetTenant(tx, caller, id);
  assertMayChange(caller, target, 'deleted');
  await checkIfMatch(ifMatch, () => getTenant(tx, caller, id), `Tenant ${id}`);
  await assertNoLiveChildTenant(tx, target.tenantId);
  const [deleted] = await tx<{ image: RowImage }[]>`
    WITH t AS (UPDATE sys_tenant t SET del_flag = '2', update_by = ${caller.userName}, update_time = now() WHERE id = ${id}::bigint RETURNING t.*)
    SELECT ${TENANT_IMAGE(tx)} FROM t`;
  await bumpTenantListVersion(tx);
  await revokeTenantSubtreeCredentials(tx, target.tenantId, caller.userName);
  await recordAudit(tx, caller, [
    { action: 'tenant.delete', entityType: 'tenant', entityId: id, tenantId: target.tenantId, changes: values(deleted!.image) },
  ]);
}
