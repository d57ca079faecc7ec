import type { Db, Sql, Tx } from '../db/database.js';
import { recordAudit } from '../audit/audit.record.js';
import type { Actor, Caller } from './auth.plugin.js';
import { AppError } from '../http/app.error.js';
import { today } from '../time.js';
import {
  accountProblem,
  clearLoginFailures,
  createSession,
  findLoginAccount,
  lockedMinutes,
  recordLoginFailure,
  revokeSession,
} from './auth.sql.js';
import { DUMMY_HASH, verifyPassword } from './password.js';

export interface LoginInput {
  tenantId: string;
  username: string;
  password: string;
}

/** One message for unknown tenant, unknown user and wrong password: a caller cannot tell which. */
const BAD_CREDENTIALS = 'Invalid tenant, username or password';

type RequestContext = Pick<Actor, 'requestId' | 'ip'>;

/**
 * Checks a login and opens a session, with its audit record in the same
 * transaction. Every refusal (401, 403, 429) is recorded too, on its own:
 * the request fails, but its record must still be written.
 */
export async function login(sql: Sql, input: LoginInput, ttlSeconds: number, context: RequestContext = {}) {
  const account = await checkLogin(sql, input).catch(async (err: unknown) => {
    if (err instanceof AppError) {
      const attempted = { tenantId: input.tenantId, userName: input.username, ...context };
      const changes = { status: err.status, reason: err.message };
      await recordAudit(sql, attempted, [{ action: 'auth.login_failed', entityType: 'session', entityId: '', changes }]);
    }
    throw err;
  });
  return sql.begin(async (tx) => {
    await clearLoginFailures(tx, input.tenantId, input.username);
    const sessionId = await createSession(tx, account.tenantId, account.userId, ttlSeconds);
    const actor = { tenantId: account.tenantId, userName: account.userName, ...context };
    await recordAudit(tx, actor, [{ action: 'auth.login', entityType: 'session', entityId: sessionId, changes: { userId: account.userId } }]);
    return { account, sessionId };
  });
}

/** Logout: the presented token's session is revoked, and recorded. */
export async function logout(tx: Tx, actor: Caller & Actor): Promise<void> {
  await revokeSession(tx, actor.tenantId, actor.sessionId);
  await recordAudit(tx, actor, [{ action: 'auth.logout', entityType: 'session', entityId: actor.sessionId, changes: { userId: actor.userId } }]);
}

/**
 * Order matters: the lock is checked before the password (a locked account
 * learns nothing), and the account's state only after the password (a
 * stranger learns nothing about it).
 */
async function checkLogin(sql: Db, input: LoginInput) {
  const minutes = await lockedMinutes(sql, input.tenantId, input.username);
  if (minutes > 0) {
    throw new AppError(429, `Too many failed logins for this account; try again in ${minutes} minute(s)`);
  }
  const account = await findLoginAccount(sql, input.tenantId, input.username);
  const ok = await verifyPassword(input.password, account?.passwordHash ?? DUMMY_HASH);
  if (!account || !ok) {
    await recordLoginFailure(sql, input.tenantId, input.username);
    throw new AppError(401, BAD_CREDENTIALS);
  }
  const problem = accountProblem(account, today());
  if (problem) throw new AppError(403, `Login refused: ${problem}`);
  return account;
}

export async function me(sql: Db, tenantId: string, userId: number) {
  const [row] = await sql<
    { userId: number; userName: string; nickName: string; deptId: number | null; role: string; id: string; tenantName: string | null; companyName: string }[]
  >`
    SELECT u.user_id AS "userId", u.user_name AS "userName", u.nick_name AS "nickName", u.dept_id AS "deptId", u.role,
           t.id::text AS id, t.tenant_name AS "tenantName", t.company_name AS "companyName"
    FROM sys_user u JOIN sys_tenant t ON t.tenant_id = u.tenant_id
    WHERE u.tenant_id = ${tenantId} AND u.user_id = ${userId}`;
  return row!;
}
