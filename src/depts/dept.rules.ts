import type { Id } from '../core/ids.js';
import type { Tx } from '../db/database.js';
import { assert } from '../core/app.error.js';
import { DEPT_NAME_MAX } from '../core/limits.js';
import type { MovedSubtree, Parent } from './dept.locks.js';

// The department rules (docs/api-rules.md#departments), one function each,
// with the SQL that checks it. The writes in dept.sql.ts are lists of these
// calls inside the write's transaction, after the row locks of dept.locks.ts
// (which rows a write locks, in which order, and why).

/** Rule: deptName is trimmed and 1 to DEPT_NAME_MAX characters (not UTF-16 units: an emoji counts once, as in varchar). */
export function trimmedName(name: string): string {
  const trimmed = name.trim();
  const length = [...trimmed].length;
  assert(length >= 1 && length <= DEPT_NAME_MAX, 400, `deptName must be 1 to ${DEPT_NAME_MAX} characters after trimming`);
  return trimmed;
}

/** Rule: parentId is 0 (the top) or a live department of the caller's tenant (400 otherwise). */
export function assertLiveParent(parent: Parent | null | undefined, parentId: Id): asserts parent is Parent | null {
  assert(parent !== undefined, 400, `parentId ${parentId} is not a live department of your tenant`);
}

/** RuoYi's path: "0" at the top, else the parent's path followed by the parent's id. */
export const deptPathUnder = (parent: Parent | null, parentId: Id) => (parent ? `${parent.ancestors},${parentId}` : '0');

/** Rule: nothing is created or enabled under a disabled parent. */
export function assertParentEnabled(parent: Parent | null, parentId: Id, refused: string): void {
  assert(!parent || parent.status === '0', 409, `Parent department ${parentId} is disabled; ${refused}`);
}

/** Rule (moves): a department is never its own parent. */
export function assertNotOwnParent(deptId: Id, parentId: Id): void {
  assert(parentId !== deptId, 409, `Department ${deptId} cannot be its own parent`);
}

/** Rule (moves): a department never goes under one of its own descendants, which would close a cycle. */
export function assertNoCycle(deptId: Id, parentId: Id, subtree: MovedSubtree): void {
  assert(!subtree.holdsNewParent, 409, `Cannot move department ${deptId} under ${parentId}: ${parentId} is one of its descendants`);
}

/** Rule: a department with an enabled child cannot be disabled; the child is named. */
export async function assertNoEnabledChild(tx: Tx, tenantId: string, deptId: Id): Promise<void> {
  const [child] = await tx<{ deptId: Id; deptName: string }[]>`
    SELECT dept_id AS "deptId", dept_name AS "deptName" FROM sys_dept
    WHERE tenant_id = ${tenantId} AND parent_id = ${deptId} AND del_flag = '0' AND status = '0'
    LIMIT 1`;
  assert(!child, 409, `Department ${deptId} has enabled child department "${child?.deptName}" (${child?.deptId}); disable it first`);
}

/**
 * Moves: every descendant's path starts with the department's old path plus
 * its id; one statement swaps that prefix for the new one across the whole
 * subtree, whatever its size, in the move's transaction. A statement of its
 * own (it was a CTE of the department's update): Citus plans a recursive
 * walk only in a statement whose every part reads the tenant's rows, and the
 * update's audit record and chart version are written, not read.
 */
export async function rewriteSubtreePaths(tx: Tx, tenantId: string, deptId: Id, oldAncestors: string, newAncestors: string): Promise<void> {
  const oldPrefix = `${oldAncestors},${deptId}`;
  const newPrefix = `${newAncestors},${deptId}`;
  await tx`
    WITH RECURSIVE descendants AS (
      SELECT dept_id FROM sys_dept WHERE tenant_id = ${tenantId} AND parent_id = ${deptId}
      UNION ALL
      SELECT d.dept_id FROM sys_dept d JOIN descendants s ON d.parent_id = s.dept_id WHERE d.tenant_id = ${tenantId}
    )
    UPDATE sys_dept d
    SET ancestors = ${newPrefix} || substr(d.ancestors, ${oldPrefix.length + 1})
    FROM descendants s
    WHERE d.tenant_id = ${tenantId} AND d.dept_id = s.dept_id`;
}

/**
 * Rule (deletes): every id is a live department of the tenant; 404 names the
 * missing ones. The live ones are locked FOR UPDATE (in id order, so two
 * overlapping batch deletes queue rather than deadlock): a create or a user
 * placed under one of them is then either committed, and seen by
 * assertNothingUnder, or waits and finds its parent deleted.
 */
export async function assertAllLive(tx: Tx, tenantId: string, ids: Id[]): Promise<void> {
  const found = await tx<{ deptId: Id }[]>`
    SELECT dept_id AS "deptId" FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ANY(${ids}::bigint[]) AND del_flag = '0'
    ORDER BY dept_id
    FOR UPDATE`;
  const live = new Set(found.map((r) => r.deptId));
  const missing = ids.filter((id) => !live.has(id));
  assert(missing.length === 0, 404, `Department(s) not found: ${missing.slice(0, 20).join(', ')}`);
}

/** Rule (deletes): no target has a live child department or a live user; the first one found is named. */
export async function assertNothingUnder(tx: Tx, tenantId: string, ids: Id[]): Promise<void> {
  const [blocked] = await tx<{ deptId: Id; deptName: string; hasChild: boolean }[]>`
    SELECT p.dept_id AS "deptId", p.dept_name AS "deptName",
           EXISTS (SELECT 1 FROM sys_dept c WHERE c.tenant_id = ${tenantId} AND c.parent_id = p.dept_id AND c.del_flag = '0') AS "hasChild"
    FROM sys_dept p
    WHERE p.tenant_id = ${tenantId} AND p.dept_id = ANY(${ids}::bigint[])
      AND (EXISTS (SELECT 1 FROM sys_dept c WHERE c.tenant_id = ${tenantId} AND c.parent_id = p.dept_id AND c.del_flag = '0')
        OR EXISTS (SELECT 1 FROM sys_user u WHERE u.tenant_id = ${tenantId} AND u.dept_id = p.dept_id AND u.del_flag = '0'))
    ORDER BY p.dept_id LIMIT 1`;
  assert(
    !blocked,
    409,
    `Department "${blocked?.deptName}" (${blocked?.deptId}) has ${blocked?.hasChild ? 'child departments' : 'users'}; ` +
      `${blocked?.hasChild ? 'delete or move them' : 'move or delete them'} first`,
  );
}
