import type { Id } from '../core/ids.js';
import type { Db, Sql, Tx } from '../db/database.js';
import { recordAudit } from '../audit/audit.record.js';
import type { Caller, RequestOrigin } from '../identity/caller.js';
import { AppError } from '../core/app.error.js';
import {
  accountProblem,
  clearLoginFailures,
  createSession,
  findLoginAccount,
  lockLoginAccount,
  purgeExpiredLoginLocks,
  replaceForeignHash,
  reserveLoginAttempt,
  revokeSession,
  ssoRequired,
} from './auth.sql.js';
import { DUMMY_HASH, hashPassword, isForeignHash, verifyPassword } from './password.js';
import { transaction } from '../db/retry.js';

export interface LoginInput {
  tenantId: string;
  username: string;
  password: string;
}

/** One message for unknown tenant, unknown user and wrong password: a caller cannot tell which. */
const BAD_CREDENTIALS = 'Invalid tenant, username or password';

/**
 * Checks a login and opens a session, with its audit record in the same
 * transaction. Every refusal (401, 403, 429) is recorded too, on its own:
 * the request fails, but its record must still be written.
 */
export async function login(sql: Sql, input: LoginInput, ttlSeconds: number, context: RequestOrigin = {}) {
  try {
    return await attemptLogin(sql, input, ttlSeconds, context);
  } catch (err) {
    if (err instanceof AppError) {
      const attempted = { tenantId: input.tenantId, userName: input.username, ...context };
      const changes = { status: err.status, reason: err.message };
      await recordAudit(sql, attempted, [{ action: 'auth.login_failed', entityType: 'session', entityId: '', changes }]);
    }
    throw err;
  }
}

/** Logout: the presented token's session is revoked, and recorded. */
export async function logout(tx: Tx, actor: Caller): Promise<void> {
  await revokeSession(tx, actor.tenantId, actor.sessionId);
  await recordAudit(tx, actor, [{ action: 'auth.logout', entityType: 'session', entityId: actor.sessionId, changes: { userId: actor.userId } }]);
}

/**
 * Order matters: an evaluation slot is
 * reserved before the password is checked (a locked account learns nothing,
 * and concurrent attempts cannot all slip past the lock), and the account's
 * state is looked at only after the password (a stranger learns nothing
 * about it). A right password frees the slots, whatever the account's state.
 */
async function attemptLogin(sql: Sql, input: LoginInput, ttlSeconds: number, context: RequestOrigin) {
  const { lockedMinutes } = await reserveLoginAttempt(sql, input.tenantId, input.username);
  if (lockedMinutes > 0) {
    throw new AppError(429, `Too many failed logins for this account; try again in ${lockedMinutes} minute(s)`);
  }
  const account = await findLoginAccount(sql, input.tenantId, input.username);
  const ok = await verifyPassword(input.password, account?.passwordHash ?? DUMMY_HASH);
  if (!account || !ok) {
    await purgeExpiredLoginLocks(sql);
    throw new AppError(401, BAD_CREDENTIALS);
  }
  await clearLoginFailures(sql, input.tenantId, input.username);
  const sessionId = await transaction(sql, async (tx) => {
    const current = await lockLoginAccount(tx, account.tenantId, account.userId);
    const problem = current ? accountProblem(current) : 'the user has been deleted';
    if (problem) throw new AppError(403, `Login refused: ${problem}`);
    // Admins keep their password: the way back in when the provider is down.
    if (current!.role === 'user' && (await ssoRequired(tx, account.tenantId))) {
      throw new AppError(403, `Login refused: tenant ${account.tenantId} requires single sign-on; sign in through its identity provider`);
    }
    if (isForeignHash(account.passwordHash)) {
      await replaceForeignHash(tx, account.tenantId, account.userId, account.passwordHash, await hashPassword(input.password));
    }
    const sessionId = await createSession(tx, account.tenantId, account.userId, ttlSeconds);
    const actor = { tenantId: account.tenantId, userName: account.userName, ...context };
    await recordAudit(tx, actor, [{ action: 'auth.login', entityType: 'session', entityId: sessionId, changes: { userId: account.userId } }]);
    return sessionId;
  });
  return { account, sessionId };
}

export async function me(sql: Db, tenantId: string, userId: Id) {
  const [row] = await sql<
    {
      userId: Id;
      userName: string;
      nickName: string;
      deptId: Id | null;
      role: string;
      id: string;
      tenantName: string | null;
      companyName: string;
    }[]
  >`
    SELECT u.user_id AS "userId", u.user_name AS "userName", u.nick_name AS "nickName", u.dept_id AS "deptId", u.role,
           t.id::text AS id, t.tenant_name AS "tenantName", t.company_name AS "companyName"
    FROM sys_user u JOIN sys_tenant t ON t.tenant_id = u.tenant_id
    WHERE u.tenant_id = ${tenantId} AND u.user_id = ${userId}`;
  return row!;
}
