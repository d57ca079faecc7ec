import { randomUUID } from 'node:crypto';
import type { Db } from '../db/database.js';
import type { Role } from './auth.roles.js';

/** The user and tenant state that decides whether a login or a token is honoured. */
export interface Principal {
  tenantId: string;
  userId: number;
  userName: string;
  nickName: string;
  deptId: number | null;
  role: Role;
  userStatus: string;
  userDelFlag: string;
  tenantStatus: string;
  tenantDelFlag: string;
  startTime: string | null;
  endTime: string | null;
}

const PRINCIPAL = (sql: Db) => sql`
  u.tenant_id AS "tenantId", u.user_id AS "userId", u.user_name AS "userName", u.nick_name AS "nickName",
  u.dept_id AS "deptId", u.role, u.status AS "userStatus", u.del_flag AS "userDelFlag",
  t.status AS "tenantStatus", t.del_flag AS "tenantDelFlag",
  t.start_time::text AS "startTime", t.end_time::text AS "endTime"`;

/**
 * Why this user may not act now, or null when it may. The same rule serves
 * login (answered 403 with this text) and every request (answered 401).
 */
export function accountProblem(p: Principal, today: string): string | null {
  if (p.tenantDelFlag !== '0') return 'the tenant has been deleted';
  if (p.tenantStatus !== '0') return 'the tenant is disabled';
  if (p.startTime !== null && today < p.startTime) return `the tenant's service period starts on ${p.startTime}`;
  if (p.endTime !== null && today > p.endTime) return `the tenant's service period ended on ${p.endTime}`;
  if (p.userDelFlag !== '0') return 'the user has been deleted';
  if (p.userStatus !== '0') return 'the user is disabled';
  return null;
}

/**
 * The account a login names, with its password hash. A live user wins over
 * deleted ones of the same name, so a deleted account can still be told
 * apart ("the user has been deleted") when its password is right.
 */
export async function findLoginAccount(sql: Db, tenantId: string, userName: string) {
  const [row] = await sql<(Principal & { passwordHash: string })[]>`
    SELECT ${PRINCIPAL(sql)}, u.password_hash AS "passwordHash"
    FROM sys_user u JOIN sys_tenant t ON t.tenant_id = u.tenant_id
    WHERE u.tenant_id = ${tenantId} AND u.user_name = ${userName}
    ORDER BY u.del_flag = '0' DESC, u.user_id DESC
    LIMIT 1`;
  return row;
}

/** Looks up an unexpired, unrevoked session with its user and tenant: one indexed read per request. */
export async function findSession(sql: Db, tenantId: string, sessionId: string) {
  const [row] = await sql<Principal[]>`
    SELECT ${PRINCIPAL(sql)}
    FROM auth_session s
    JOIN sys_user u ON u.tenant_id = s.tenant_id AND u.user_id = s.user_id
    JOIN sys_tenant t ON t.tenant_id = s.tenant_id
    WHERE s.tenant_id = ${tenantId} AND s.session_id = ${sessionId}
      AND s.revoked_at IS NULL AND s.expires_at > now()`;
  return row;
}

export async function createSession(sql: Db, tenantId: string, userId: number, ttlSeconds: number): Promise<string> {
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
export async function revokeUserSessions(sql: Db, tenantId: string, userId: number): Promise<void> {
  await sql`UPDATE auth_session SET revoked_at = now() WHERE tenant_id = ${tenantId} AND user_id = ${userId} AND revoked_at IS NULL`;
}

// Lockout: five failures within ten minutes lock the tenant+username for ten minutes.
const MAX_FAILURES = 5;
const WINDOW_MINUTES = 10;

/** Minutes the login stays locked, or 0 when it is open. */
export async function lockedMinutes(sql: Db, tenantId: string, userName: string): Promise<number> {
  const [row] = await sql<{ minutes: number }[]>`
    SELECT ceil(extract(epoch FROM locked_until - now()) / 60)::int AS minutes
    FROM login_lock
    WHERE tenant_id = ${tenantId} AND user_name = ${userName} AND locked_until > now()`;
  return row?.minutes ?? 0;
}

/** Counts a failure in one statement, so concurrent wrong guesses are all counted. */
export async function recordLoginFailure(sql: Db, tenantId: string, userName: string): Promise<void> {
  await sql`
    INSERT INTO login_lock AS l (tenant_id, user_name, failures, window_start)
    VALUES (${tenantId}, ${userName}, 1, now())
    ON CONFLICT (tenant_id, user_name) DO UPDATE SET
      failures = CASE WHEN l.window_start < now() - make_interval(mins => ${WINDOW_MINUTES}) THEN 1 ELSE l.failures + 1 END,
      window_start = CASE WHEN l.window_start < now() - make_interval(mins => ${WINDOW_MINUTES}) THEN now() ELSE l.window_start END,
      locked_until = CASE
        WHEN l.window_start >= now() - make_interval(mins => ${WINDOW_MINUTES}) AND l.failures + 1 >= ${MAX_FAILURES}
        THEN now() + make_interval(mins => ${WINDOW_MINUTES})
        ELSE l.locked_until END`;
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
