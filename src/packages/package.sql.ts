import type { Db, Tx } from '../db/database.js';
import { serializePlatformWrites } from '../db/citus.js';
import { assert } from '../core/app.error.js';
import { parseInternalId } from '../core/ids.js';
import { checkIfMatch, assertIfMatchFits } from '../core/version.js';
import { MAX_BATCH_IDS } from '../core/limits.js';
import { fromRow, selectList } from '../db/fields.js';
import { pageOf } from '../db/page.js';
import { contains } from '../db/sql.helpers.js';
import type { Actor } from '../identity/caller.js';
import { diff, recordAudit, values, type RowImage } from '../audit/audit.record.js';
import { PACKAGE_FIELDS } from './package.fields.js';
import { normaliseMenuIds } from './package.menus.js';
import { assertNotInUse, lockLivePackages, menusReachTenants, PACKAGE_IMAGE } from './package.rules.js';
import type { Package, PackageCreate, PackageListQuery, PackageUpdate } from './package.schema.js';

// Packages (docs/api-rules.md#packages): platform-wide menu lists that
// tenants take by packageId. Written by the superadmin, read by admins; every
// write is one transaction with its audit record, in the platform's trail.
// The rules each write applies are in package.rules.ts.

const COLUMNS = (db: Db) => selectList(db, 'p', PACKAGE_FIELDS);
const toPackage = (row: Record<string, unknown>): Package => fromRow(row, PACKAGE_FIELDS);

/** The writable columns of a create or a full replacement: omitted fields get their defaults. */
function writable(input: PackageCreate) {
  return {
    package_name: input.packageName.trim(),
    menu_ids: normaliseMenuIds(input.menuIds ?? '', 'menuIds'),
    remark: input.remark ?? null,
    status: input.status ?? '0',
  };
}

export async function getPackage(db: Db, id: string): Promise<Package | undefined> {
  const [row] =
    await db`SELECT ${COLUMNS(db)} FROM sys_package p WHERE p.package_id = ${parseInternalId(id, 'Package')}::bigint AND p.del_flag = '0'`;
  return row && toPackage(row);
}

/** The live packages, oldest first, filtered by a substring of the name and by status. */
export async function listPackages(db: Db, query: PackageListQuery): Promise<{ total: number; rows: Package[] }> {
  const page = await pageOf<Record<string, unknown>>(
    db,
    {
      select: COLUMNS(db),
      from: db`sys_package p WHERE p.del_flag = '0'
        ${query.packageName !== undefined ? db`AND ${contains(db, db`p.package_name`, query.packageName)}` : db``}
        ${query.status !== undefined ? db`AND p.status = ${query.status}` : db``}`,
      orderBy: db`p.package_id`,
    },
    query,
  );
  return { total: page.total, rows: page.rows.map(toPackage) };
}

export async function createPackage(tx: Tx, actor: Actor, input: PackageCreate): Promise<string> {
  await serializePlatformWrites(tx);
  const [row] = await tx<{ packageId: string; image: RowImage }[]>`
    WITH p AS (INSERT INTO sys_package ${tx({ ...writable(input), create_by: actor.userName })} RETURNING *)
    SELECT p.package_id::text AS "packageId", ${PACKAGE_IMAGE(tx)} FROM p`;
  await recordAudit(tx, actor, [{ action: 'package.create', entityType: 'package', entityId: row!.packageId, changes: values(row!.image) }]);
  return row!.packageId;
}

/**
 * Full replacement. A change of menus reaches every live tenant on the
 * package in the same transaction (menusReachTenants); answers how many.
 */
export async function updatePackage(tx: Tx, actor: Actor, input: PackageUpdate, ifMatch?: string): Promise<number> {
  await serializePlatformWrites(tx);
  const [target] = await lockLivePackages(tx, [parseInternalId(input.packageId, 'Package')]);
  await checkIfMatch(ifMatch, () => getPackage(tx, input.packageId), `Package ${input.packageId}`);
  const columns = writable(input);
  // The image from a CTE: Citus allows no STABLE function (to_jsonb) in a write's RETURNING.
  const [after] = await tx<{ image: RowImage }[]>`
    WITH p AS (
      UPDATE sys_package p SET ${tx({ ...columns, update_by: actor.userName })}, update_time = now()
      WHERE p.package_id = ${target!.packageId}::bigint
      RETURNING p.*)
    SELECT ${PACKAGE_IMAGE(tx)} FROM p`;
  await recordAudit(tx, actor, [
    { action: 'package.update', entityType: 'package', entityId: target!.packageId, changes: diff(target!.image, after!.image) },
  ]);
  return columns.menu_ids === target!.menuIds ? 0 : menusReachTenants(tx, actor, target!.packageId, columns.menu_ids);
}

/** Logical delete of one package or several, all or none: refused while a live tenant is on any of them. */
export async function deletePackages(tx: Tx, actor: Actor, rawIds: string, ifMatch?: string): Promise<void> {
  await serializePlatformWrites(tx);
  const ids = [...new Set(rawIds.split(',').map((id) => parseInternalId(id, 'Package')))];
  assert(ids.length <= MAX_BATCH_IDS, 400, `The path may list at most ${MAX_BATCH_IDS} ids, got ${ids.length}`);
  assertIfMatchFits(ifMatch, ids);
  const targets = await lockLivePackages(tx, ids);
  if (ids.length === 1) await checkIfMatch(ifMatch, () => getPackage(tx, ids[0]!), `Package ${ids[0]}`);
  await assertNotInUse(tx, ids);
  await tx`UPDATE sys_package p SET del_flag = '2', update_by = ${actor.userName}, update_time = now() WHERE p.package_id = ANY(${ids}::bigint[])`;
  await recordAudit(
    tx,
    actor,
    targets.map((t) => ({ action: 'package.delete' as const, entityType: 'package' as const, entityId: t.packageId, changes: values(t.image) })),
  );
}
