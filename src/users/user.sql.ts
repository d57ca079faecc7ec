import { canonicalId, withCanonicalIds, type Id } from '../core/ids.js';
import type { Db, Tx } from '../db/database.js';
import { lockUsers } from '../db/locks.js';
import { checkIfMatch } from '../core/version.js';
import { hashPassword, NO_PASSWORD_HASH } from '../auth/password.js';
import { revokeSessionsOfUsers, revokeUserSessions } from '../auth/auth.sql.js';
import { assertOwnTenant, type Actor, type Caller } from '../identity/caller.js';
import { contains } from '../db/sql.helpers.js';
import { fromRow, selectList, writeColumns } from '../db/fields.js';
import { recordAudit, values, type RowImage } from '../audit/audit.record.js';
import type { User, UserCreate, UserListQuery, UserUpdate } from './user.schema.js';
import { USER_FIELDS } from './user.fields.js';
import { assertAccountQuota, assertLiveDept, assertNotSelf, endsUserSessions, lockChangeableUsers, userUpdateRecords } from './user.rules.js';

const COLUMNS = (sql: Db) => selectList(sql, 'sys_user', USER_FIELDS);
const toUser = (row: Record<string, unknown>): User => fromRow(row, USER_FIELDS);
/** The write columns of a create or full replacement; the single role is stored in `role`. */
const userColumns = (input: Omit<UserCreate, 'password'> | UserUpdate) => writeColumns(USER_FIELDS, input);

export async function getUser(sql: Db, tenantId: string, userId: Id): Promise<User | undefined> {
  const [row] = await sql<Record<string, unknown>[]>`
    SELECT ${COLUMNS(sql)} FROM sys_user WHERE tenant_id = ${tenantId} AND user_id = ${userId} AND del_flag = '0'`;
  return row && toUser(row);
}

export async function listUsers(sql: Db, tenantId: string, query: UserListQuery): Promise<User[]> {
  const rows = await sql<Record<string, unknown>[]>`
    SELECT ${COLUMNS(sql)} FROM sys_user
    WHERE tenant_id = ${tenantId} AND del_flag = '0'
      ${query.deptId !== undefined ? sql`AND dept_id = ${canonicalId(query.deptId, 'deptId')}` : sql``}
      ${query.userName !== undefined ? sql`AND ${contains(sql, sql`user_name`, query.userName)}` : sql``}
      ${query.status !== undefined ? sql`AND status = ${query.status}` : sql``}
    ORDER BY user_id`;
  return rows.map(toUser);
}

/**
 * `extra`: columns outside the REST user (the SCIM-only ones, docs/scim.md#users).
 * A user created without a password (only SCIM does that) has a hash no password matches.
 */
export async function createUser(
  tx: Tx,
  actor: Actor,
  sent: Omit<UserCreate, 'password'> & { password?: string },
  extra: Record<string, unknown> = {},
): Promise<Id> {
  const input = withCanonicalIds(sent, ['deptId']);
  assertOwnTenant(actor, input.tenantId, 'users');
  const passwordHash = input.password === undefined ? NO_PASSWORD_HASH : await hashPassword(input.password);
  await lockUsers(tx, actor.tenantId);
  await assertLiveDept(tx, actor.tenantId, input.deptId);
  await assertAccountQuota(tx, actor.tenantId);
  // The row's image from a CTE: Citus allows no STABLE function (to_jsonb) in a distributed write's RETURNING.
  const [row] = await tx<{ userId: Id; image: RowImage }[]>`
    WITH u AS (INSERT INTO sys_user ${tx({
      ...userColumns(input),
      ...extra,
      role: input.roles[0]!,
      tenant_id: actor.tenantId,
      password_hash: passwordHash,
      create_by: actor.userName,
    })}
    RETURNING *)
    SELECT user_id AS "userId", to_jsonb(u) AS image FROM u`;
  await recordAudit(tx, actor, [{ action: 'user.create', entityType: 'user', entityId: row!.userId, changes: values(row!.image) }]);
  return row!.userId;
}

/** Full replacement; the password changes only when sent. `extra` as for createUser. */
export async function updateUser(tx: Tx, actor: Caller, sent: UserUpdate, ifMatch?: string, extra: Record<string, unknown> = {}): Promise<void> {
  const input = withCanonicalIds(sent, ['userId', 'deptId']);
  assertOwnTenant(actor, input.tenantId, 'users');
  const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
  await lockUsers(tx, actor.tenantId);
  const before = (await lockChangeableUsers(tx, actor.tenantId, [input.userId])).get(input.userId)!;
  await checkIfMatch(ifMatch, () => getUser(tx, actor.tenantId, input.userId), `User ${input.userId}`);
  await assertLiveDept(tx, actor.tenantId, input.deptId);
  const [after] = await tx<{ image: RowImage }[]>`
    WITH u AS (
      UPDATE sys_user SET ${tx({ ...userColumns(input), ...extra, role: input.roles[0]!, update_by: actor.userName })},
        password_hash = COALESCE(${passwordHash}, password_hash), update_time = now()
      WHERE tenant_id = ${actor.tenantId} AND user_id = ${input.userId}
      RETURNING *)
    SELECT to_jsonb(u) AS image FROM u`;
  if (endsUserSessions(input)) await revokeUserSessions(tx, actor.tenantId, input.userId);
  await recordAudit(tx, actor, userUpdateRecords(input.userId, before, after!.image, passwordHash !== null));
}

export async function deleteUsers(tx: Tx, actor: Caller, ids: Id[], ifMatch?: string): Promise<void> {
  assertNotSelf(actor.userId, ids);
  await lockUsers(tx, actor.tenantId);
  await lockChangeableUsers(tx, actor.tenantId, ids);
  await checkIfMatch(ifMatch, () => getUser(tx, actor.tenantId, ids[0]!), `User ${ids[0]}`);
  const deleted = await tx<{ userId: Id; image: RowImage }[]>`
    WITH u AS (
      UPDATE sys_user SET del_flag = '2', update_by = ${actor.userName}, update_time = now()
      WHERE tenant_id = ${actor.tenantId} AND user_id = ANY(${ids}::bigint[])
      RETURNING *)
    SELECT user_id AS "userId", to_jsonb(u) AS image FROM u`;
  await revokeSessionsOfUsers(tx, actor.tenantId, ids);
  await recordAudit(
    tx,
    actor,
    deleted.map((u) => ({ action: 'user.delete' as const, entityType: 'user' as const, entityId: u.userId, changes: values(u.image) })),
  );
}
