import type { Db, Tx } from '../db/database.js';
import { lockOrganisation } from '../db/locks.js';
import { containing } from '../db/sql.helpers.js';
import { assert } from '../core/app.error.js';
import { checkIfMatch } from '../core/version.js';
import { formatDateTime } from '../core/time.js';
import { assertOwnTenant, type Actor } from '../identity/caller.js';
import { diff, recordAudit, values, type RowImage } from '../audit/audit.record.js';
import { assertDepthFits } from './dept.depth.js';
import type { Dept, DeptCreate, DeptListQuery, DeptNode, DeptUpdate } from './dept.schema.js';
import { NAME_MAX } from '../core/limits.js';

type DeptRow = Omit<Dept, 'createTime' | 'updateTime'> & { createTime: Date; updateTime: Date | null };

const COLUMNS = (sql: Db) => sql`
  tenant_id AS "tenantId", dept_id AS "deptId", parent_id AS "parentId", ancestors,
  dept_name AS "deptName", order_num AS "orderNum", leader, phone, email, status,
  del_flag AS "delFlag", create_by AS "createBy", create_time AS "createTime",
  update_by AS "updateBy", update_time AS "updateTime"`;

const toDept = (row: DeptRow): Dept => ({
  ...row,
  createTime: formatDateTime(row.createTime),
  updateTime: formatDateTime(row.updateTime),
});

// ---------------------------------------------------------------- reads

export async function getDept(sql: Db, tenantId: string, deptId: number): Promise<Dept | undefined> {
  const [row] = await sql<DeptRow[]>`
    SELECT ${COLUMNS(sql)} FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ${deptId} AND del_flag = '0'`;
  return row && toDept(row);
}

/**
 * The list filters (DeptListQuery) over sys_dept: the tenant's live rows, a
 * name containing deptName, a status, a parent. Shared by listDepts and the
 * chart (dept.chart.ts), so both answer the same rows.
 */
export function listFilter(sql: Db, tenantId: string, query: DeptListQuery) {
  return sql`
    tenant_id = ${tenantId} AND del_flag = '0'
      ${query.deptName !== undefined ? sql`AND dept_name LIKE ${containing(query.deptName)}` : sql``}
      ${query.status !== undefined ? sql`AND status = ${query.status}` : sql``}
      ${query.parentId !== undefined ? sql`AND parent_id = ${query.parentId}` : sql``}`;
}

/** Live departments, filtered, in display order (parentId, orderNum, deptId). */
export async function listDepts(sql: Db, tenantId: string, query: DeptListQuery): Promise<Dept[]> {
  const rows = await sql<DeptRow[]>`
    SELECT ${COLUMNS(sql)} FROM sys_dept WHERE ${listFilter(sql, tenantId, query)}
    ORDER BY parent_id, order_num, dept_id`;
  return rows.map(toDept);
}

/** The choices of a new parent for `deptId`: every live department but itself and its descendants. */
export async function listParentChoices(sql: Db, tenantId: string, deptId: number): Promise<Dept[]> {
  assert(await getDept(sql, tenantId, deptId), 404, `Department ${deptId} not found`);
  const rows = await sql<DeptRow[]>`
    WITH RECURSIVE excluded AS (
      SELECT ${deptId}::bigint AS dept_id
      UNION
      SELECT d.dept_id FROM sys_dept d JOIN excluded e ON d.tenant_id = ${tenantId} AND d.parent_id = e.dept_id
    )
    SELECT ${COLUMNS(sql)} FROM sys_dept
    WHERE tenant_id = ${tenantId} AND del_flag = '0' AND dept_id NOT IN (SELECT dept_id FROM excluded)
    ORDER BY parent_id, order_num, dept_id`;
  return rows.map(toDept);
}

/** Nests a list ordered by parentId, orderNum, deptId; a node whose parent is not in the list is a root. */
export function toTree(depts: Dept[]): DeptNode[] {
  const nodes = new Map<number, DeptNode>();
  for (const dept of depts) nodes.set(dept.deptId, { ...dept, children: [] });
  const roots: DeptNode[] = [];
  for (const node of nodes.values()) {
    const parent = nodes.get(node.parentId);
    (parent ? parent.children : roots).push(node);
  }
  return roots;
}

// ---------------------------------------------------------------- rules shared by create and update

interface Parent {
  ancestors: string;
  status: string;
}

/** Rule: parentId is 0 or a live department of the caller's tenant (400 otherwise). */
async function liveParent(tx: Tx, tenantId: string, parentId: number): Promise<Parent | null> {
  if (parentId === 0) return null;
  const [parent] = await tx<Parent[]>`
    SELECT ancestors, status FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ${parentId} AND del_flag = '0'`;
  assert(parent, 400, `parentId ${parentId} is not a live department of your tenant`);
  return parent;
}

/** RuoYi's path: "0" at the top, else the parent's path followed by the parent's id. */
const pathUnder = (parent: Parent | null, parentId: number) => (parent ? `${parent.ancestors},${parentId}` : '0');

function trimmedName(name: string): string {
  const trimmed = name.trim();
  // Characters, not UTF-16 units: an emoji counts once, as in varchar(30).
  const length = [...trimmed].length;
  assert(length >= 1 && length <= NAME_MAX, 400, `deptName must be 1 to ${NAME_MAX} characters after trimming`);
  return trimmed;
}

// ---------------------------------------------------------------- writes (each inside one transaction)

export async function createDept(tx: Tx, actor: Actor, input: DeptCreate): Promise<number> {
  assertOwnTenant(actor, input.tenantId, 'departments');
  const deptName = trimmedName(input.deptName);
  await lockOrganisation(tx, actor.tenantId);
  const parent = await liveParent(tx, actor.tenantId, input.parentId);
  // Rule: no new department under a disabled parent.
  assert(!parent || parent.status === '0', 409, `Parent department ${input.parentId} is disabled; enable it before adding departments under it`);
  await assertDepthFits(tx, actor.tenantId, parent, input.parentId);
  const [row] = await tx<{ deptId: number; image: RowImage }[]>`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, order_num, leader, phone, email, status, create_by)
    VALUES (${actor.tenantId}, ${input.parentId}, ${pathUnder(parent, input.parentId)}, ${deptName},
            ${input.orderNum ?? 0}, ${input.leader ?? null}, ${input.phone ?? null}, ${input.email ?? null},
            ${input.status ?? '0'}, ${actor.userName})
    RETURNING dept_id AS "deptId", to_jsonb(sys_dept) AS image`;
  await recordAudit(tx, actor, [{ action: 'dept.create', entityType: 'dept', entityId: row!.deptId, changes: values(row!.image) }]);
  return row!.deptId;
}

/**
 * Full replacement of one department. A changed parent is checked for
 * cycles by walking up from the new parent, then the department's own path
 * and its whole subtree's paths are rewritten by one statement each,
 * whatever the subtree's size.
 */
export async function updateDept(tx: Tx, actor: Actor, input: DeptUpdate, ifMatch?: string): Promise<void> {
  assertOwnTenant(actor, input.tenantId, 'departments');
  const deptName = trimmedName(input.deptName);
  const { tenantId } = actor;
  const status = input.status ?? '0';
  await lockOrganisation(tx, tenantId);

  const [current] = await tx<{ parentId: number; ancestors: string; status: string; image: RowImage }[]>`
    SELECT parent_id AS "parentId", ancestors, status, to_jsonb(sys_dept) AS image FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ${input.deptId} AND del_flag = '0'`;
  assert(current, 404, `Department ${input.deptId} not found`);
  await checkIfMatch(ifMatch, () => getDept(tx, tenantId, input.deptId), `Department ${input.deptId}`);

  // Rule: a department is never its own ancestor, directly or through its descendants.
  assert(input.parentId !== input.deptId, 409, `Department ${input.deptId} cannot be its own parent`);
  const parent = await liveParent(tx, tenantId, input.parentId);
  const moved = input.parentId !== current.parentId;
  if (moved && parent) {
    const [{ cycle } = { cycle: false }] = await tx<{ cycle: boolean }[]>`
      WITH RECURSIVE up AS (
        SELECT dept_id, parent_id FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${input.parentId}
        UNION
        SELECT d.dept_id, d.parent_id FROM sys_dept d JOIN up ON d.tenant_id = ${tenantId} AND d.dept_id = up.parent_id
      )
      SELECT EXISTS (SELECT 1 FROM up WHERE dept_id = ${input.deptId}) AS cycle`;
    assert(!cycle, 409, `Cannot move department ${input.deptId} under ${input.parentId}: ${input.parentId} is one of its descendants`);
  }
  if (moved) await assertDepthFits(tx, tenantId, parent, input.parentId, input.deptId);

  // Rule: nothing enabled under a disabled parent; nothing disabled above an enabled child.
  if (status === '0') {
    assert(!parent || parent.status === '0', 409, `Parent department ${input.parentId} is disabled; a department under it cannot be enabled`);
  } else {
    const [child] = await tx<{ deptId: number; deptName: string }[]>`
      SELECT dept_id AS "deptId", dept_name AS "deptName" FROM sys_dept
      WHERE tenant_id = ${tenantId} AND parent_id = ${input.deptId} AND del_flag = '0' AND status = '0'
      LIMIT 1`;
    assert(!child, 409, `Department ${input.deptId} has enabled child department "${child?.deptName}" (${child?.deptId}); disable it first`);
  }

  const ancestors = moved ? pathUnder(parent, input.parentId) : current.ancestors;
  const [updated] = await tx<{ image: RowImage }[]>`
    UPDATE sys_dept SET
      parent_id = ${input.parentId}, ancestors = ${ancestors}, dept_name = ${deptName},
      order_num = ${input.orderNum ?? 0}, leader = ${input.leader ?? null}, phone = ${input.phone ?? null},
      email = ${input.email ?? null}, status = ${status}, update_by = ${actor.userName}, update_time = now()
    WHERE tenant_id = ${tenantId} AND dept_id = ${input.deptId}
    RETURNING to_jsonb(sys_dept) AS image`;
  // One record for the department itself; its descendants' rewritten paths follow from the move.
  const action = moved ? 'dept.move' : 'dept.update';
  await recordAudit(tx, actor, [{ action, entityType: 'dept', entityId: input.deptId, changes: diff(current.image, updated!.image) }]);

  if (moved) {
    // Every descendant's path starts with the department's old path plus its
    // id; swap that prefix for the new one across the whole subtree.
    const oldPrefix = `${current.ancestors},${input.deptId}`;
    const newPrefix = `${ancestors},${input.deptId}`;
    await tx`
      WITH RECURSIVE subtree AS (
        SELECT dept_id FROM sys_dept WHERE tenant_id = ${tenantId} AND parent_id = ${input.deptId}
        UNION ALL
        SELECT d.dept_id FROM sys_dept d JOIN subtree s ON d.tenant_id = ${tenantId} AND d.parent_id = s.dept_id
      )
      UPDATE sys_dept d
      SET ancestors = ${newPrefix} || substr(d.ancestors, ${oldPrefix.length + 1})
      FROM subtree s
      WHERE d.tenant_id = ${tenantId} AND d.dept_id = s.dept_id`;
  }
}

/**
 * Logical delete of one or many departments, all or nothing: every id must
 * be a live department of the caller's tenant (404 naming the missing ones)
 * and none may have a live child department or a live user (409 naming it).
 */
export async function deleteDepts(tx: Tx, actor: Actor, ids: number[], ifMatch?: string): Promise<void> {
  const { tenantId } = actor;
  await lockOrganisation(tx, tenantId);
  const found = await tx<{ deptId: number }[]>`
    SELECT dept_id AS "deptId" FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ANY(${ids}::bigint[]) AND del_flag = '0'`;
  const live = new Set(found.map((r) => r.deptId));
  const missing = ids.filter((id) => !live.has(id));
  assert(missing.length === 0, 404, `Department(s) not found: ${missing.slice(0, 20).join(', ')}`);
  await checkIfMatch(ifMatch, () => getDept(tx, tenantId, ids[0]!), `Department ${ids[0]}`);

  // Rule: no target with a live child department or a live user; the first one found is named.
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

  const deleted = await tx<{ deptId: number; image: RowImage }[]>`
    UPDATE sys_dept SET del_flag = '2', update_by = ${actor.userName}, update_time = now()
    WHERE tenant_id = ${tenantId} AND dept_id = ANY(${ids}::bigint[])
    RETURNING dept_id AS "deptId", to_jsonb(sys_dept) AS image`;
  await recordAudit(
    tx,
    actor,
    deleted.map((d) => ({ action: 'dept.delete' as const, entityType: 'dept' as const, entityId: d.deptId, changes: values(d.image) })),
  );
}
