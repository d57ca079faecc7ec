import type { Id } from '../core/ids.js';
import type { PendingQuery, Row } from 'postgres';
import type { Db, Tx } from '../db/database.js';
import { AppError, assert } from '../core/app.error.js';
import { checkIfMatch, etagOf } from '../core/version.js';
import { lockUsers } from '../db/locks.js';
import { fromRow, selectList } from '../db/fields.js';
import { windowOf } from '../db/page.js';
import type { Caller } from '../identity/caller.js';
import { DEPT_FIELDS } from '../depts/dept.fields.js';
import { createDept, deleteDepts, getDept, updateDept } from '../depts/dept.sql.js';
import { getUser, updateUser } from '../users/user.sql.js';
import { ScimConflict } from './scim.conflict.js';
import type { GroupState } from './scim.group.state.js';

// SCIM Groups (docs/scim.md#groups) are the tenant's departments; a group's
// members are the live users whose department it is. Every write goes
// through the department and user write paths (src/depts/dept.sql.ts,
// src/users/user.sql.ts), so sibling names, cycles, depth, disabled
// parents, the audit records and every other rule hold as in the REST API.

type Fragment = PendingQuery<Row[]>;

export interface ScimGroupRow extends Omit<GroupState, 'members'> {
  id: Id;
  ancestors: string;
  members: { id: Id; userName: string }[];
  created: Date;
  lastModified: Date;
  version: string;
}

const COLUMNS = (sql: Db) => sql`
  ${selectList(sql, 'g', DEPT_FIELDS)}, g.external_id AS "externalId",
  g.create_time AS created, coalesce(g.update_time, g.create_time) AS "lastModified"`;

const FROM = (sql: Db, tenantId: string) => sql`sys_dept g WHERE g.tenant_id = ${tenantId} AND g.del_flag = '0'`;

/** The groups of `rows` with their members, read in one statement for the whole page. */
async function withMembers(sql: Db, tenantId: string, rows: Record<string, unknown>[]): Promise<ScimGroupRow[]> {
  const depts = rows.map((row) => ({ row, dept: fromRow(row, DEPT_FIELDS) }));
  const ids = depts.map(({ dept }) => dept.deptId);
  const members =
    ids.length === 0
      ? []
      : await sql<{ deptId: Id; id: Id; userName: string }[]>`
          SELECT dept_id AS "deptId", user_id AS id, user_name AS "userName" FROM sys_user
          WHERE tenant_id = ${tenantId} AND del_flag = '0' AND dept_id = ANY(${ids}::bigint[])
          ORDER BY user_id`;
  return depts.map(({ row, dept }) => ({
    id: dept.deptId,
    displayName: dept.deptName,
    externalId: row.externalId as string | null,
    parentId: dept.parentId,
    orderNum: dept.orderNum,
    leader: dept.leader,
    phone: dept.phone,
    email: dept.email,
    status: dept.status,
    ancestors: dept.ancestors,
    members: members.filter((m) => m.deptId === dept.deptId).map(({ id, userName }) => ({ id, userName })),
    created: row.created as Date,
    lastModified: row.lastModified as Date,
    // The department's ETag (docs/api-rules.md#concurrency-control), as GET /system/dept-api/{id} answers it.
    version: etagOf(dept),
  }));
}

export async function getScimGroup(sql: Db, tenantId: string, id: Id): Promise<ScimGroupRow | undefined> {
  const rows = await sql<Record<string, unknown>[]>`SELECT ${COLUMNS(sql)} FROM ${FROM(sql, tenantId)} AND g.dept_id = ${id}`;
  return (await withMembers(sql, tenantId, rows))[0];
}

export async function findScimGroups(
  sql: Db,
  tenantId: string,
  where: Fragment | undefined,
  startIndex: number,
  count: number,
): Promise<{ total: number; rows: ScimGroupRow[] }> {
  const from = sql`${FROM(sql, tenantId)} ${where ? sql`AND (${where})` : sql``}`;
  const { total, rows } = await windowOf<Record<string, unknown>>(
    sql,
    { select: COLUMNS(sql), from, orderBy: sql`g.dept_id` },
    startIndex - 1,
    count,
  );
  return { total, rows: await withMembers(sql, tenantId, rows) };
}

const deptInput = (state: Omit<GroupState, 'members'>) => ({
  parentId: state.parentId,
  deptName: state.displayName,
  orderNum: state.orderNum,
  leader: state.leader,
  phone: state.phone,
  email: state.email,
  status: state.status,
});

/**
 * Rule: adding a member moves that user into the department; removing a
 * member that is still in it leaves the user with no department. Each move
 * is the user write path's (its audit record included). A member that is
 * not a live user of the tenant is refused (400).
 */
async function moveMembers(tx: Tx, actor: Caller, deptId: Id, before: Id[], after: Id[]): Promise<void> {
  const joining = after.filter((id) => !before.includes(id));
  const leaving = before.filter((id) => !after.includes(id));
  for (const [userId, to] of [...leaving.map((id) => [id, null] as const), ...joining.map((id) => [id, deptId] as const)]) {
    const user = await getUser(tx, actor.tenantId, userId);
    assert(user, 400, `members: ${userId} is not a user of this tenant`);
    if (user.deptId === to) continue;
    const [role] = user.roles;
    if (role === 'superadmin') throw new AppError(403, `members: ${userId} is the superadmin account and cannot be moved through SCIM`);
    const { userName, nickName, email, phonenumber, status } = user;
    await updateUser(tx, actor, { userId, userName, nickName, email, phonenumber, status, deptId: to, roles: [role!] });
  }
}

export async function createScimGroup(tx: Tx, actor: Caller, state: GroupState): Promise<Id> {
  const id = await createDept(tx, actor, deptInput(state), { external_id: state.externalId });
  await moveMembers(tx, actor, id, [], state.members);
  return id;
}

/**
 * PUT and PATCH /Groups/{id}: `change` turns the group's current state into
 * the new one, read under the users lock the writes then keep.
 */
export async function patchScimGroup(tx: Tx, actor: Caller, id: Id, change: (current: GroupState) => GroupState, ifMatch?: string): Promise<void> {
  await lockUsers(tx, actor.tenantId);
  const current = await getScimGroup(tx, actor.tenantId, id);
  assert(current, 404, `Group ${id} not found`);
  const before = current.members.map((m) => m.id);
  const next = change({ ...current, members: before });
  // A change of members alone is the users' moves only, as in the REST API: the department is not written (no dept.update record).
  const deptChanged = JSON.stringify([deptInput(next), next.externalId]) !== JSON.stringify([deptInput(current), current.externalId]);
  if (deptChanged) await updateDept(tx, actor, { deptId: id, ...deptInput(next) }, ifMatch, { external_id: next.externalId });
  else await checkIfMatch(ifMatch, () => getDept(tx, actor.tenantId, id), `Group ${id}`);
  await moveMembers(tx, actor, id, before, next.members);
}

/** DELETE /Groups/{id}: refused while it has child departments (409 mutability); its members are detached, then it is deleted logically. */
export async function deleteScimGroup(tx: Tx, actor: Caller, id: Id, ifMatch?: string): Promise<void> {
  await lockUsers(tx, actor.tenantId);
  const current = await getScimGroup(tx, actor.tenantId, id);
  assert(current, 404, `Group ${id} not found`);
  const [child] = await tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${actor.tenantId} AND parent_id = ${id} AND del_flag = '0' LIMIT 1`;
  if (child) throw new ScimConflict('mutability', `Group ${id} has child departments; delete or move them first`);
  // Members are detached first (deleteDepts refuses a department with users); a stale If-Match rolls all of it back.
  await moveMembers(
    tx,
    actor,
    id,
    current.members.map((m) => m.id),
    [],
  );
  await deleteDepts(tx, actor, [id], ifMatch);
}
