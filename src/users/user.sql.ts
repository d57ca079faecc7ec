import type { Db, Tx } from '../db/database.js';
import { lockOrganisation } from '../db/locks.js';
import { assert } from '../core/app.error.js';
import { checkIfMatch } from '../core/version.js';
import { formatDateTime } from '../core/time.js';
import { hashPassword } from '../auth/password.js';
import { revokeSessionsOfUsers, revokeUserSessions } from '../auth/auth.sql.js';
import { assertOwnTenant, type Actor, type Caller } from '../identity/caller.js';
import { containing } from '../db/sql.helpers.js';
import { diff, recordAudit, values, type AuditEntry, type RowImage } from '../audit/audit.record.js';
import type { User, UserCreate, UserListQuery, UserUpdate } from './user.schema.js';

type UserRow = Omit<User, 'createTime' | 'updateTime' | 'roles'> & { role: User['roles'][number]; createTime: Date; updateTime: Date | null };

const COLUMNS = (sql: Db) => sql`
  tenant_id AS "tenantId", user_id AS "userId", dept_id AS "deptId", user_name AS "userName",
  nick_name AS "nickName", email, phonenumber, status, del_flag AS "delFlag", role,
  create_by AS "createBy", create_time AS "createTime", update_by AS "updateBy", update_time AS "updateTime"`;

const toUser = ({ role, ...row }: UserRow): User => ({
  ...row,
  roles: [role],
  createTime: formatDateTime(row.createTime),
  updateTime: formatDateTime(row.updateTime),
});

export async function getUser(sql: Db, tenantId: string, userId: number): Promise<User | undefined> {
  const [row] = await sql<UserRow[]>`
    SELECT ${COLUMNS(sql)} FROM sys_user WHERE tenant_id = ${tenantId} AND user_id = ${userId} AND del_flag = '0'`;
  return row && toUser(row);
}

export async function listUsers(sql: Db, tenantId: string, query: UserListQuery): Promise<User[]> {
  const rows = await sql<UserRow[]>`
    SELECT ${COLUMNS(sql)} FROM sys_user
    WHERE tenant_id = ${tenantId} AND del_flag = '0'
      ${query.deptId !== undefined ? sql`AND dept_id = ${query.deptId}` : sql``}
      ${query.userName !== undefined ? sql`AND user_name LIKE ${containing(query.userName)}` : sql``}
      ${query.status !== undefined ? sql`AND status = ${query.status}` : sql``}
    ORDER BY user_id`;
  return rows.map(toUser);
}

/** Rule: a user's department, when given, is a live department of the same tenant. */
async function checkDept(tx: Tx, tenantId: string, deptId: number | null | undefined): Promise<void> {
  if (deptId === null || deptId === undefined) return;
  const [dept] = await tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${deptId} AND del_flag = '0'`;
  assert(dept, 400, `deptId ${deptId} is not a live department of your tenant`);
}

/**
 * Rule: a tenant never has more live users than its accountCount (-1:
 * unlimited). Creates in one tenant run one at a time under the
 * organisation lock, so the count cannot be stale when the row goes in.
 */
async function checkAccountQuota(tx: Tx, tenantId: string): Promise<void> {
  const [quota] = await tx<{ accountCount: number; live: number }[]>`
    SELECT t.account_count AS "accountCount",
           (SELECT count(*) FROM sys_user u WHERE u.tenant_id = t.tenant_id AND u.del_flag = '0') AS live
    FROM sys_tenant t WHERE t.tenant_id = ${tenantId}`;
  assert(
    quota && (quota.accountCount === -1 || quota.live < quota.accountCount),
    409,
    `The tenant's account quota is reached (${quota?.live} of ${quota?.accountCount} accounts)`,
  );
}

export async function createUser(tx: Tx, actor: Actor, input: UserCreate): Promise<number> {
  assertOwnTenant(actor, input.tenantId, 'users');
  const passwordHash = await hashPassword(input.password);
  await lockOrganisation(tx, actor.tenantId);
  await checkDept(tx, actor.tenantId, input.deptId);
  await checkAccountQuota(tx, actor.tenantId);
  const [row] = await tx<{ userId: number; image: RowImage }[]>`
    INSERT INTO sys_user (tenant_id, dept_id, user_name, nick_name, email, phonenumber, status, role, password_hash, create_by)
    VALUES (${actor.tenantId}, ${input.deptId ?? null}, ${input.userName}, ${input.nickName ?? ''}, ${input.email ?? null},
            ${input.phonenumber ?? null}, ${input.status ?? '0'}, ${input.roles[0]!}, ${passwordHash}, ${actor.userName})
    RETURNING user_id AS "userId", to_jsonb(sys_user) AS image`;
  await recordAudit(tx, actor, [{ action: 'user.create', entityType: 'user', entityId: row!.userId, changes: values(row!.image) }]);
  return row!.userId;
}

/** The platform's superadmin account is managed at bootstrap, never through this API. */
/**
 * Locks the live users about to change, in one read however many there are.
 * The first id (in the order given) that is not a live user of the tenant
 * answers 404; the superadmin account answers 403.
 */
async function lockChangeableUsers(tx: Tx, tenantId: string, userIds: number[]): Promise<Map<number, RowImage>> {
  const rows = await tx<{ userId: number; role: string; image: RowImage }[]>`
    SELECT user_id AS "userId", role, to_jsonb(sys_user) AS image FROM sys_user
    WHERE tenant_id = ${tenantId} AND user_id = ANY(${userIds}::bigint[]) AND del_flag = '0'
    FOR UPDATE`;
  const roles = new Map(rows.map((r) => [r.userId, r.role]));
  for (const userId of userIds) {
    assert(roles.has(userId), 404, `User ${userId} not found`);
    assert(roles.get(userId) !== 'superadmin', 403, `User ${userId} is the superadmin account and cannot be changed through the API`);
  }
  return new Map(rows.map((r) => [r.userId, r.image]));
}

export async function updateUser(tx: Tx, actor: Caller, input: UserUpdate, ifMatch?: string): Promise<void> {
  assertOwnTenant(actor, input.tenantId, 'users');
  const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
  await lockOrganisation(tx, actor.tenantId);
  const before = (await lockChangeableUsers(tx, actor.tenantId, [input.userId])).get(input.userId)!;
  await checkIfMatch(ifMatch, () => getUser(tx, actor.tenantId, input.userId), `User ${input.userId}`);
  await checkDept(tx, actor.tenantId, input.deptId);
  const [after] = await tx<{ image: RowImage }[]>`
    UPDATE sys_user SET
      dept_id = ${input.deptId ?? null}, user_name = ${input.userName}, nick_name = ${input.nickName ?? ''},
      email = ${input.email ?? null}, phonenumber = ${input.phonenumber ?? null}, status = ${input.status ?? '0'},
      role = ${input.roles[0]!}, password_hash = COALESCE(${passwordHash}, password_hash),
      update_by = ${actor.userName}, update_time = now()
    WHERE tenant_id = ${actor.tenantId} AND user_id = ${input.userId}
    RETURNING to_jsonb(sys_user) AS image`;
  // A password change or a disable ends every session the user holds.
  if (passwordHash !== null || input.status === '1') await revokeUserSessions(tx, actor.tenantId, input.userId);
  await recordAudit(tx, actor, userUpdateRecords(input.userId, before, after!.image, passwordHash !== null));
}

/**
 * A PUT carrying a password writes `user.password` (no values: the record
 * says only that it changed) and, when other fields changed too,
 * `user.update` with those; without a password, one `user.update`.
 */
function userUpdateRecords(userId: number, before: RowImage, after: RowImage, passwordChanged: boolean): AuditEntry[] {
  const changes = diff(before, after);
  const records: AuditEntry[] = [];
  if (passwordChanged) records.push({ action: 'user.password', entityType: 'user', entityId: userId, changes: {} });
  if (!passwordChanged || Object.keys(changes).length > 0) records.push({ action: 'user.update', entityType: 'user', entityId: userId, changes });
  return records;
}

export async function deleteUsers(tx: Tx, actor: Caller, ids: number[], ifMatch?: string): Promise<void> {
  assert(!ids.includes(actor.userId), 409, 'You cannot delete your own account');
  await lockOrganisation(tx, actor.tenantId);
  await lockChangeableUsers(tx, actor.tenantId, ids);
  await checkIfMatch(ifMatch, () => getUser(tx, actor.tenantId, ids[0]!), `User ${ids[0]}`);
  const deleted = await tx<{ userId: number; image: RowImage }[]>`
    UPDATE sys_user SET del_flag = '2', update_by = ${actor.userName}, update_time = now()
    WHERE tenant_id = ${actor.tenantId} AND user_id = ANY(${ids}::bigint[])
    RETURNING user_id AS "userId", to_jsonb(sys_user) AS image`;
  await revokeSessionsOfUsers(tx, actor.tenantId, ids);
  await recordAudit(
    tx,
    actor,
    deleted.map((u) => ({ action: 'user.delete' as const, entityType: 'user' as const, entityId: u.userId, changes: values(u.image) })),
  );
}
