import type { Db, Tx } from '../db/database.js';
import { assert } from '../core/app.error.js';
import { INT8_MAX } from '../core/limits.js';
import type { Actor } from '../identity/caller.js';
import { auditRecordsAcross } from '../audit/audit.record.js';
import { normaliseMenuIds, sameMenus } from './package.menus.js';
import { bumpTenantListVersion } from '../identity/tenant.version.js';

// The package rules (docs/api-rules.md#packages), one function each, with
// the SQL that checks it. Two locks make them race-free: a write to a
// package or its delete locks the package row FOR UPDATE, and a tenant that
// takes a package locks it FOR SHARE, so each waits for the other and then
// reads what the other committed.

/** What a tenant's write says of its package: a packageId, or a menu list of its own. */
export interface PackageChoice {
  packageId?: string | null;
  menuIds?: string;
}

/**
 * Rule: a tenant on a package takes the package's menus. Naming a package
 * needs a live one (400) that is open to tenants (status "0", 409), unless
 * the tenant is already on it (`current`): keeping the package is always
 * allowed, even once it is disabled. menuIds sent beside it must be absent
 * or the package's (400). The package row is share-locked, so a delete or a
 * menu change of it waits for this write, then sees this tenant on it.
 * Without a packageId the tenant keeps a menu list of its own.
 */
export async function packageTaken(tx: Tx, choice: PackageChoice | null | undefined, current: string | null) {
  const packageId = choice?.packageId ?? null;
  if (packageId === null) return { packageId: null, menuIds: normaliseMenuIds(choice?.menuIds ?? '', 'packageBo.menuIds') };
  const [pkg] =
    BigInt(packageId) > INT8_MAX
      ? []
      : await tx<{ packageId: string; menuIds: string; status: string }[]>`
          SELECT p.package_id::text AS "packageId", p.menu_ids AS "menuIds", p.status FROM sys_package p
          WHERE p.package_id = ${packageId}::bigint AND p.del_flag = '0'
          FOR SHARE`;
  assert(pkg, 400, `packageBo.packageId ${packageId} is not a live package`);
  assert(
    pkg.status === '0' || pkg.packageId === current,
    409,
    `Package ${pkg.packageId} is disabled: tenants already on it keep it, no other takes it`,
  );
  if (choice?.menuIds !== undefined) {
    assert(
      sameMenus(pkg.menuIds, normaliseMenuIds(choice.menuIds, 'packageBo.menuIds')),
      400,
      `packageBo.menuIds must be left out or be package ${pkg.packageId}'s menus ("${pkg.menuIds}"): a tenant on a package takes its menus`,
    );
  }
  return { packageId: pkg.packageId, menuIds: pkg.menuIds };
}

/** The live packages `ids`, locked FOR UPDATE in id order (so two writes never wait on each other in a circle); 404 naming any not found. */
export async function lockLivePackages(tx: Tx, ids: string[]) {
  const rows = await tx<{ packageId: string; menuIds: string; image: Record<string, unknown> }[]>`
    SELECT p.package_id::text AS "packageId", p.menu_ids AS "menuIds", ${PACKAGE_IMAGE(tx)}
    FROM sys_package p WHERE p.package_id = ANY(${ids}::bigint[]) AND p.del_flag = '0'
    ORDER BY p.package_id
    FOR UPDATE`;
  const found = new Set(rows.map((r) => r.packageId));
  const missing = ids.filter((id) => !found.has(id));
  assert(missing.length === 0, 404, `Package(s) not found: ${missing.join(',')}`);
  return rows;
}

/** The package row `p` for the audit record; the 19-digit id as text, since a JSON number would lose digits. */
export const PACKAGE_IMAGE = (db: Db) => db`to_jsonb(p) || jsonb_build_object('package_id', p.package_id::text) AS image`;

/**
 * Rule: a package in use by a live tenant cannot be deleted (409 giving how
 * many). Called with the packages locked (lockLivePackages): a tenant taking
 * one at this moment holds its share lock until it commits, so this count,
 * taken after the lock, includes it.
 */
export async function assertNotInUse(tx: Tx, ids: string[]): Promise<void> {
  const used = await tx<{ packageId: string; tenants: string }[]>`
    SELECT t.package_id::text AS "packageId", count(*) AS tenants FROM sys_tenant t
    WHERE t.package_id = ANY(${ids}::bigint[]) AND t.del_flag = '0'
    GROUP BY t.package_id ORDER BY t.package_id`;
  assert(
    used.length === 0,
    409,
    `Package(s) in use: ${used.map((u) => `${u.packageId} by ${u.tenants} live tenant(s)`).join(', ')}; move those tenants off first`,
  );
}

/**
 * Rule: a package's menu change reaches every live tenant on it, in the
 * change's transaction and in one statement for all of them (no loop):
 * their menus become the package's, and each tenant whose menus changed gets
 * one `tenant.menus` record in its own trail, {packageId, menusAdded,
 * menusRemoved}, so its feed, stream and webhooks carry it. The difference
 * is worked out once per distinct former menu list (in practice one: the
 * tenants on a package share its menus), as hash anti-joins in menu order.
 * Answers how many tenants changed.
 */
export async function menusReachTenants(tx: Tx, actor: Actor, packageId: string, menuIds: string): Promise<number> {
  const [row] = await tx<{ reached: string }[]>`
    WITH before AS (
      SELECT t.id, t.menu_ids FROM sys_tenant t
      WHERE t.package_id = ${packageId}::bigint AND t.del_flag = '0' AND t.menu_ids <> ${menuIds}
      FOR UPDATE),
    reached AS (
      UPDATE sys_tenant t SET menu_ids = ${menuIds}, update_by = ${actor.userName}, update_time = now()
      FROM before b WHERE t.id = b.id
      RETURNING t.id, t.tenant_id, b.menu_ids AS old),
    change AS (
      SELECT o.old, jsonb_build_object(
        'packageId', ${packageId}::text,
        'menusAdded', to_jsonb(ARRAY(
          SELECT n.m FROM unnest(string_to_array(${menuIds}, ',')) WITH ORDINALITY AS n(m, i)
          WHERE NOT EXISTS (SELECT 1 FROM unnest(string_to_array(o.old, ',')) AS x(m) WHERE x.m = n.m) ORDER BY n.i)),
        'menusRemoved', to_jsonb(ARRAY(
          SELECT x.m FROM unnest(string_to_array(o.old, ',')) WITH ORDINALITY AS x(m, i)
          WHERE NOT EXISTS (SELECT 1 FROM unnest(string_to_array(${menuIds}, ',')) AS n(m) WHERE n.m = x.m) ORDER BY x.i))) AS changes
      FROM (SELECT DISTINCT r.old FROM reached r) o)
    ${auditRecordsAcross(tx, actor, 'tenant.menus', 'tenant', tx`SELECT r.tenant_id, r.id::text, c.changes FROM reached r JOIN change c ON c.old = r.old`)}
    SELECT count(*) AS reached FROM reached`;
  const reached = Number(row!.reached);
  if (reached > 0) await bumpTenantListVersion(tx);
  return reached;
}
