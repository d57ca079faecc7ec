import type { Id } from '../core/ids.js';
import type { PendingQuery, Row } from 'postgres';
import type { Db, Tx } from '../db/database.js';
import { AppError, assert } from '../core/app.error.js';
import { etagOf } from '../core/version.js';
import { lockUsers } from '../db/locks.js';
import type { Caller } from '../identity/caller.js';
import { selectList, fromRow } from '../db/fields.js';
import { windowOf } from '../db/page.js';
import { USER_FIELDS } from '../users/user.fields.js';
import { createUser, deleteUsers, updateUser } from '../users/user.sql.js';
import { ScimConflict } from './scim.conflict.js';
import type { UserState } from './scim.user.state.js';

// SCIM Users (docs/scim.md#users) are the tenant's users: read here with the
// columns SCIM adds (sql/009_scim.sql), written through the same write paths
// as the REST API (src/users/user.sql.ts), so every user rule, the audit
// record and the revocation of a disabled user's sessions hold alike.

type Fragment = PendingQuery<Row[]>;

/** A user as SCIM shows it, with the REST record's ETag (the same version as GET /system/user-api/{id}). */
export interface ScimUserRow extends UserState {
  id: Id;
  deptId: Id | null;
  deptName: string | null;
  role: 'superadmin' | 'admin' | 'user';
  created: Date;
  lastModified: Date;
  version: string;
}

const COLUMNS = (sql: Db) => sql`
  ${selectList(sql, 'u', USER_FIELDS)}, u.external_id AS "externalId", u.given_name AS "givenName", u.family_name AS "familyName",
  u.create_time AS created, coalesce(u.update_time, u.create_time) AS "lastModified", d.dept_name AS "deptName"`;

const FROM = (sql: Db, tenantId: string) => sql`
  sys_user u LEFT JOIN sys_dept d ON d.tenant_id = u.tenant_id AND d.dept_id = u.dept_id
  WHERE u.tenant_id = ${tenantId} AND u.del_flag = '0'`;

function toRow(row: Record<string, unknown>): ScimUserRow {
  const user = fromRow(row, USER_FIELDS);
  return {
    id: user.userId,
    userName: user.userName,
    nickName: user.nickName,
    givenName: row.givenName as string | null,
    familyName: row.familyName as string | null,
    email: user.email,
    phone: user.phonenumber,
    active: user.status === '0',
    externalId: row.externalId as string | null,
    deptId: user.deptId,
    deptName: row.deptName as string | null,
    role: user.roles[0]!,
    created: row.created as Date,
    lastModified: row.lastModified as Date,
    version: etagOf(user),
  };
}

export async function getScimUser(sql: Db, tenantId: string, id: Id): Promise<ScimUserRow | undefined> {
  const [row] = await sql<Record<string, unknown>[]>`SELECT ${COLUMNS(sql)} FROM ${FROM(sql, tenantId)} AND u.user_id = ${id}`;
  return row && toRow(row);
}

/** One page of the live users matching `where` (a translated filter), by id (RFC 7644 §3.4.2.4: 1-based startIndex). */
export async function findScimUsers(
  sql: Db,
  tenantId: string,
  where: Fragment | undefined,
  startIndex: number,
  count: number,
): Promise<{ total: number; rows: ScimUserRow[] }> {
  const from = sql`${FROM(sql, tenantId)} ${where ? sql`AND (${where})` : sql``}`;
  const { total, rows } = await windowOf<Record<string, unknown>>(
    sql,
    { select: COLUMNS(sql), from, orderBy: sql`u.user_id` },
    startIndex - 1,
    count,
  );
  return { total, rows: rows.map(toRow) };
}

const extraColumns = (state: UserState) => ({ external_id: state.externalId, given_name: state.givenName, family_name: state.familyName });

/**
 * Rule (SCIM writes): a userName is unique among the tenant's live users
 * regardless of case, as SCIM defines it (RFC 7643 §4.1.1), so a provider's
 * filter on it never finds two. Checked under the users lock the
 * write then keeps; the REST API's own rule stays exact.
 */
async function assertUserNameFree(tx: Tx, tenantId: string, userName: string, except: Id | null): Promise<void> {
  await lockUsers(tx, tenantId);
  const [taken] = await tx<{ id: Id }[]>`
    SELECT user_id AS id FROM sys_user
    WHERE tenant_id = ${tenantId} AND del_flag = '0' AND lower(user_name) = lower(${userName}) AND user_id <> ${except ?? 0}
    LIMIT 1`;
  if (taken) throw new ScimConflict('uniqueness', `userName "${userName}" is taken (by user ${taken.id}; names are compared without case)`);
}

/** POST /Users: a new user of role `user`, in no department (membership is the Groups' business). */
export async function createScimUser(tx: Tx, actor: Caller, state: UserState): Promise<Id> {
  await assertUserNameFree(tx, actor.tenantId, state.userName, null);
  return createUser(
    tx,
    actor,
    {
      userName: state.userName,
      nickName: state.nickName,
      email: state.email,
      phonenumber: state.phone,
      status: state.active ? '0' : '1',
      roles: ['user'],
      ...(state.password === undefined ? {} : { password: state.password }),
    },
    extraColumns(state),
  );
}

/**
 * PUT and PATCH /Users/{id}: `change` turns the user's current state into
 * the new one, read under the users lock that the write then keeps,
 * so a concurrent change is never overwritten with a stale state. What SCIM
 * does not manage is kept: the role, and the department (a user joins or
 * leaves one through the Groups).
 */
export async function patchScimUser(tx: Tx, actor: Caller, id: Id, change: (current: UserState) => UserState, ifMatch?: string): Promise<void> {
  await lockUsers(tx, actor.tenantId);
  const current = await getScimUser(tx, actor.tenantId, id);
  assert(current, 404, `User ${id} not found`);
  await replaceScimUser(tx, actor, current, change(current), ifMatch);
}

async function replaceScimUser(tx: Tx, actor: Caller, current: ScimUserRow, state: UserState, ifMatch?: string): Promise<void> {
  if (current.role === 'superadmin') throw new AppError(403, `User ${current.id} is the superadmin account and cannot be changed through SCIM`);
  if (state.userName !== current.userName) await assertUserNameFree(tx, actor.tenantId, state.userName, current.id);
  await updateUser(
    tx,
    actor,
    {
      userId: current.id,
      userName: state.userName,
      nickName: state.nickName,
      email: state.email,
      phonenumber: state.phone,
      status: state.active ? '0' : '1',
      deptId: current.deptId,
      roles: [current.role],
      ...(state.password === undefined ? {} : { password: state.password }),
    },
    ifMatch,
    extraColumns(state),
  );
}

export async function deleteScimUser(tx: Tx, actor: Caller, id: Id, ifMatch?: string): Promise<void> {
  await deleteUsers(tx, actor, [id], ifMatch);
}
