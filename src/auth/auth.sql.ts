import type { Id } from '../core/ids.js';
import { randomUUID } from 'node:crypto';
import { acrossTenants } from '../db/citus.js';
import type { Db, Tx } from '../db/database.js';
import type { Role } from '../identity/roles.js';
import { inTenantSubtree } from '../identity/scope.js';
import { BLOCKING_COLUMNS, BLOCKING_TENANT, tenantProblem, type TenantState } from '../identity/tenant.state.js';

/** The user and tenant state that decides whether a login or a token is honoured. */
export interface AccountState extends TenantState {
  userId: Id;
  userName: string;
  nickName: string;
  deptId: Id | null;
  role: Role;
  userStatus: string;
  userDelFlag: string;
}

/** Columns of an AccountState over `sys_user u JOIN sys_tenant t` and BLOCKING_TENANT's `b`. */
const PRINCIPAL = (sql: Db) => sql`
  u.tenant_id AS "tenantId", u.user_id AS "userId", u.user_name AS "userName", u.nick_name AS "nickName",
  u.dept_id AS "deptId", u.role, u.status AS "userStatus", u.del_flag AS "userDelFlag", ${BLOCKING_COLUMNS(sql)}`;

/**
 * Why this user may not act now, or null when it may. The same rule serves
 * login (answered 403 with this text) and every request (answered 401).
 * A tenant is suspended when it or any ancestor is deleted, disabled or
 * outside its service period; the message names the tenant that is the cause.
 */
export function accountProblem(p: AccountState): string | null {
  const tenant = tenantProblem(p);
  if (tenant) return tenant;
  if (p.userDelFlag !== '0') return 'the user has been deleted';
  if (p.userStatus !== '0') return 'the user is disabled';
  return null;
}

/** Whether the tenant requires its users of role `user` to sign in through its identity provider (docs/sso.md#sso-required). */
export async function ssoRequired(sql: Db, tenantId: string): Promise<boolean> {
  const [row] = await sql<{ required: boolean }[]>`SELECT sso_required AS required FROM sso_policy WHERE tenant_id = ${tenantId}`;
  return row?.required ?? false;
}

/**
 * The account a login names, with its password hash. A live user wins over
 * deleted ones of the same name, so a deleted account can still be told
 * apart ("the user has been deleted") when its password is right.
 */
export async function findLoginAccount(sql: Db, tenantId: string, userName: string) {
  const [row] = await sql<(AccountState & { passwordHash: string })[]>`
    SELECT ${PRINCIPAL(sql)}, u.password_hash AS "passwordHash"
    FROM sys_user u JOIN sys_tenant t ON t.tenant_id = u.tenant_id
    ${BLOCKING_TENANT(sql)}
    WHERE u.tenant_id = ${tenantId} AND u.user_name = ${userName}
    ORDER BY u.del_flag = '0' DESC, u.user_id DESC
    LIMIT 1`;
  return row;
}

/**
 * Rule: a foreign hash (RuoYi's BCrypt, docs/migrate-from-ruoyi.md#passwords) is
 * replaced by the service's own at the first login it opens, unless the
 * password changed in between (the row no longer holds that hash).
 */
export async function replaceForeignHash(tx: Tx, tenantId: string, userId: Id, foreign: string, own: string): Promise<void> {
  await tx`UPDATE sys_user SET password_hash = ${own} WHERE tenant_id = ${tenantId} AND user_id = ${userId} AND password_hash = ${foreign}`;
}

/**
 * The login's account again, inside the transaction that opens its session,
 * after share-locking the user row and every tenant row of its chain. A
 * disable or delete of any of them holds its row lock until it has committed
 * (and revoked the sessions it ends), so a login racing it either finishes
 * first, and its new session is then revoked, or waits and reads the new
 * state: no session is ever issued on a state read before the disable.
 */
export async function lockLoginAccount(tx: Tx, tenantId: string, userId: Id): Promise<AccountState | undefined> {
  await tx`SELECT 1 FROM sys_user WHERE tenant_id = ${tenantId} AND user_id = ${userId} FOR SHARE`;
  await tx`
    SELECT 1 FROM sys_tenant
    WHERE tenant_id = ANY ((SELECT string_to_array(ancestors, ',') || tenant_id FROM sys_tenant WHERE tenant_id = ${tenantId})::text[])
    FOR SHARE`;
  const [row] = await tx<AccountState[]>`
    SELECT ${PRINCIPAL(tx)}
    FROM sys_user u JOIN sys_tenant t ON t.tenant_id = u.tenant_id
    ${BLOCKING_TENANT(tx)}
    WHERE u.tenant_id = ${tenantId} AND u.user_id = ${userId}`;
  return row;
}

/**
 * Looks up an unexpired session with its user and the state of its tenant
 * chain: one indexed query per request. A revoked session is returned too,
 * flagged, so its refusal can say why when the account is suspended.
 */
export async function findSession(sql: Db, tenantId: string, sessionId: string) {
  const [row] = await sql<(AccountState & { revoked: boolean })[]>`
    SELECT ${PRINCIPAL(sql)}, s.revoked_at IS NOT NULL AS revoked
    FROM auth_session s
    JOIN sys_user u ON u.tenant_id = s.tenant_id AND u.user_id = s.user_id
    JOIN sys_tenant t ON t.tenant_id = s.tenant_id
    ${BLOCKING_TENANT(sql)}
    WHERE s.tenant_id = ${tenantId} AND s.session_id = ${sessionId} AND s.expires_at > now()`;
  return row;
}

/** Whether the session behind `caller` still admits it: unexpired, not revoked, its user and tenant chain live. */
export async function sessionIsLive(sql: Db, caller: { tenantId: string; sessionId: string }): Promise<boolean> {
  const session = await findSession(sql, caller.tenantId, caller.sessionId);
  return Boolean(session && !session.revoked && !accountProblem(session));
}

export async function createSession(sql: Db, tenantId: string, userId: Id, ttlSeconds: number): Promise<string> {
  const sessionId = randomUUID();
  await sql`
    INSERT INTO auth_session (tenant_id, session_id, user_id, expires_at)
    VALUES (${tenantId}, ${sessionId}, ${userId}, now() + make_interval(secs => ${ttlSeconds}))`;
  // Expired sessions are useless; dropping the user's old ones here keeps the table small.
  await sql`DELETE FROM auth_session WHERE tenant_id = ${tenantId} AND user_id = ${userId} AND expires_at < now()`;
  return sessionId;
}

export async function revokeSession(sql: Db, tenantId: string, sessionId: string): Promise<void> {
  await sql`UPDATE auth_session SET revoked_at = now() WHERE tenant_id = ${tenantId} AND session_id = ${sessionId} AND revoked_at IS NULL`;
}

/** After a password change every token the user holds stops working. */
export async function revokeUserSessions(sql: Db, tenantId: string, userId: Id): Promise<void> {
  await revokeSessionsOfUsers(sql, tenantId, [userId]);
}

/** Disabling or deleting users: every token they hold stops working, for good (re-enabling does not revive it). */
export async function revokeSessionsOfUsers(sql: Db, tenantId: string, userIds: Id[]): Promise<void> {
  await sql`
    UPDATE auth_session SET revoked_at = now()
    WHERE tenant_id = ${tenantId} AND user_id = ANY(${userIds}::bigint[]) AND revoked_at IS NULL`;
}

/**
 * Suspending a tenant suspends its whole subtree: every session of the
 * users of the tenant and of all its descendant tenants is revoked, and so
 * is every API key of theirs (docs/security.md#api-keys), for good, by `by`.
 */
export async function revokeTenantSubtreeCredentials(sql: Db, tenantId: string, by: string): Promise<void> {
  // A subtree of tenants by design (docs/scale-out.md#across-tenants-by-design).
  await acrossTenants(sql, async (db) => {
    await db`
      UPDATE auth_session SET revoked_at = now()
      WHERE revoked_at IS NULL AND tenant_id IN (SELECT s.tenant_id FROM sys_tenant s WHERE ${inTenantSubtree(db, 's', tenantId)})`;
    await db`
      UPDATE sys_api_key SET revoke_time = now(), revoke_by = ${by}
      WHERE revoke_time IS NULL AND tenant_id IN (SELECT s.tenant_id FROM sys_tenant s WHERE ${inTenantSubtree(db, 's', tenantId)})`;
  });
}

// Lockout: at most five password evaluations per tenant+username in a
// ten-minute window; the fifth locks the login for ten minutes.
const MAX_FAILURES = 5;
const WINDOW_MINUTES = 10;
/** Expired lock rows removed per failed login: bounded work, yet faster than failures can add rows. */
const PURGE_BATCH = 100;

/**
 * Reserves one password evaluation for tenant+username, or answers the
 * minutes the login stays locked. The slot is taken BEFORE the password is
 * checked, in one upsert whose row lock serialises racing attempts (on every
 * node sharing the database): five slots are handed out per window, however
 * many attempts arrive at once, and the fifth sets the lock. A reserved slot
 * counts as a failure unless the password proves right (clearLoginFailures).
 * A window or lock that has run out starts afresh.
 */
export async function reserveLoginAttempt(sql: Db, tenantId: string, userName: string): Promise<{ lockedMinutes: number }> {
  // now() and now() + the window are read once, in VALUES, and the update takes them from the row it would have
  // inserted (excluded.window_start, excluded.window_end): Citus runs an upsert on a distributed table only when its
  // DO UPDATE calls no function that is not IMMUTABLE, and adding an interval to a timestamptz is STABLE.
  const [now, end] = [sql`excluded.window_start`, sql`excluded.window_end`];
  const stale = sql`(l.window_end <= ${now} OR coalesce(l.locked_until <= ${now}, false))`;
  const reserved = await sql`
    INSERT INTO login_lock AS l (tenant_id, user_name, failures, window_start, window_end)
    VALUES (${tenantId}, ${userName}, 1, now(), now() + make_interval(mins => ${WINDOW_MINUTES}))
    ON CONFLICT (tenant_id, user_name) DO UPDATE SET
      failures = CASE WHEN ${stale} THEN 1 ELSE l.failures + 1 END,
      window_start = CASE WHEN ${stale} THEN ${now} ELSE l.window_start END,
      window_end = CASE WHEN ${stale} THEN ${end} ELSE l.window_end END,
      locked_until = CASE WHEN NOT ${stale} AND l.failures + 1 >= ${MAX_FAILURES} THEN ${end} END
    WHERE l.locked_until IS NULL OR l.locked_until <= ${now}
    RETURNING 1`;
  if (reserved.length > 0) return { lockedMinutes: 0 };
  const [row] = await sql<{ minutes: number }[]>`
    SELECT ceil(extract(epoch FROM locked_until - now()) / 60)::int AS minutes
    FROM login_lock WHERE tenant_id = ${tenantId} AND user_name = ${userName}`;
  return { lockedMinutes: Math.max(1, row?.minutes ?? 1) };
}

/**
 * Removes up to PURGE_BATCH lock rows whose window and lock have both run
 * out (unknown usernames included), so the table holds little more than the
 * last twenty minutes of failing names. Called after each failed login.
 */
export async function purgeExpiredLoginLocks(sql: Db): Promise<void> {
  // Every tenant's stale counters, by age (docs/scale-out.md#across-tenants-by-design).
  await acrossTenants(
    sql,
    (db) => db`
    DELETE FROM login_lock WHERE (tenant_id, user_name) IN (
      SELECT tenant_id, user_name FROM login_lock
      WHERE window_start <= now() - make_interval(mins => ${WINDOW_MINUTES})
        AND (locked_until IS NULL OR locked_until <= now())
      LIMIT ${PURGE_BATCH})`,
  );
}

export async function clearLoginFailures(sql: Db, tenantId: string, userName: string): Promise<void> {
  await sql`DELETE FROM login_lock WHERE tenant_id = ${tenantId} AND user_name = ${userName}`;
}

/** JWT_SECRET, or one generated once and shared through the database by every node. */
export async function sharedJwtSecret(sql: Db, generated: string): Promise<string> {
  await sql`INSERT INTO app_setting (key, value) VALUES ('jwt_secret', ${generated}) ON CONFLICT (key) DO NOTHING`;
  const [row] = await sql<{ value: string }[]>`SELECT value FROM app_setting WHERE key = 'jwt_secret'`;
  return row!.value;
}
