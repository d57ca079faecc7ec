import type { Tx } from '../db/database.js';
import { assert } from '../core/app.error.js';
import { NAME_MAX } from '../core/limits.js';
import type { RowImage } from '../audit/audit.record.js';

// The department rules (docs/api-rules.md#departments), one function each,
// with the SQL that checks it. The writes in dept.sql.ts are lists of these
// calls, made under the organisation lock, inside the write's transaction.

/** The parent a department hangs under: what its path and the enabled rule need. */
export interface Parent {
  ancestors: string;
  status: string;
}

/** Rule: deptName is trimmed and 1 to NAME_MAX characters (not UTF-16 units: an emoji counts once, as in varchar). */
export function trimmedName(name: string): string {
  const trimmed = name.trim();
  const length = [...trimmed].length;
  assert(length >= 1 && length <= NAME_MAX, 400, `deptName must be 1 to ${NAME_MAX} characters after trimming`);
  return trimmed;
}

/** Rule: parentId is 0 (the top) or a live department of the caller's tenant (400 otherwise). */
export async function liveParent(tx: Tx, tenantId: string, parentId: number): Promise<Parent | null> {
  if (parentId === 0) return null;
  const [parent] = await tx<Parent[]>`
    SELECT ancestors, status FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ${parentId} AND del_flag = '0'`;
  assert(parent, 400, `parentId ${parentId} is not a live department of your tenant`);
  return parent;
}

/** RuoYi's path: "0" at the top, else the parent's path followed by the parent's id. */
export const pathUnder = (parent: Parent | null, parentId: number) => (parent ? `${parent.ancestors},${parentId}` : '0');

/** Rule: nothing is created or enabled under a disabled parent. */
export function assertParentEnabled(parent: Parent | null, parentId: number, refused: string): void {
  assert(!parent || parent.status === '0', 409, `Parent department ${parentId} is disabled; ${refused}`);
}

/** The live department a write is about to change, as it is now (404 when there is none). */
export async function currentDept(tx: Tx, tenantId: string, deptId: number) {
  const [current] = await tx<{ parentId: number; ancestors: string; status: string; image: RowImage }[]>`
    SELECT parent_id AS "parentId", ancestors, status, to_jsonb(sys_dept) AS image FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ${deptId} AND del_flag = '0'`;
  assert(current, 404, `Department ${deptId} not found`);
  return current;
}

/** Rule (moves): a department is never its own parent. */
export function assertNotOwnParent(deptId: number, parentId: number): void {
  assert(parentId !== deptId, 409, `Department ${deptId} cannot be its own parent`);
}

/**
 * Rule (moves): a department never goes under one of its own descendants,
 * which would close a cycle. Walks up from the new parent; the organisation
 * lock keeps the chain still meanwhile.
 */
export async function assertNoCycle(tx: Tx, tenantId: string, deptId: number, parentId: number): Promise<void> {
  const [{ cycle } = { cycle: false }] = await tx<{ cycle: boolean }[]>`
    WITH RECURSIVE up AS (
      SELECT dept_id, parent_id FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${parentId}
      UNION
      SELECT d.dept_id, d.parent_id FROM sys_dept d JOIN up ON d.tenant_id = ${tenantId} AND d.dept_id = up.parent_id
    )
    SELECT EXISTS (SELECT 1 FROM up WHERE dept_id = ${deptId}) AS cycle`;
  assert(!cycle, 409, `Cannot move department ${deptId} under ${parentId}: ${parentId} is one of its descendants`);
}

/** Rule: a department with an enabled child cannot be disabled; the child is named. */
export async function assertNoEnabledChild(tx: Tx, tenantId: string, deptId: number): Promise<void> {
  const [child] = await tx<{ deptId: number; deptName: string }[]>`
    SELECT dept_id AS "deptId", dept_name AS "deptName" FROM sys_dept
    WHERE tenant_id = ${tenantId} AND parent_id = ${deptId} AND del_flag = '0' AND status = '0'
    LIMIT 1`;
  assert(!child, 409, `Department ${deptId} has enabled child department "${child?.deptName}" (${child?.deptId}); disable it first`);
}

/**
 * Moves: every descendant's path starts with the department's old path plus
 * its id; one statement swaps that prefix for the new one across the whole
 * subtree, whatever its size.
 */
export async function rewriteSubtreePaths(tx: Tx, tenantId: string, deptId: number, oldAncestors: string, newAncestors: string): Promise<void> {
  const oldPrefix = `${oldAncestors},${deptId}`;
  const newPrefix = `${newAncestors},${deptId}`;
  await tx`
    WITH RECURSIVE subtree AS (
      SELECT dept_id FROM sys_dept WHERE tenant_id = ${tenantId} AND parent_id = ${deptId}
      UNION ALL
      SELECT d.dept_id FROM sys_dept d JOIN subtree s ON d.tenant_id = ${tenantId} AND d.parent_id = s.dept_id
    )
    UPDATE sys_dept d
    SET ancestors = ${newPrefix} || substr(d.ancestors, ${oldPrefix.length + 1})
    FROM subtree s
    WHERE d.tenant_id = ${tenantId} AND d.dept_id = s.dept_id`;
}

/** Rule (deletes): every id is a live department of the tenant; 404 names the missing ones. */
export async function assertAllLive(tx: Tx, tenantId: string, ids: number[]): Promise<void> {
  const found = await tx<{ deptId: number }[]>`
    SELECT dept_id AS "deptId" FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ANY(${ids}::bigint[]) AND del_flag = '0'`;
  const live = new Set(found.map((r) => r.deptId));
  const missing = ids.filter((id) => !live.has(id));
  assert(missing.length === 0, 404, `Department(s) not found: ${missing.slice(0, 20).join(', ')}`);
}

/** Rule (deletes): no target has a live child department or a live user; the first one found is named. */
export async function assertNothingUnder(tx: Tx, tenantId: string, ids: number[]): Promise<void> {
  const [blocked] = await tx<{ deptId: number; deptName: string; hasChild: boolean }[]>`
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
