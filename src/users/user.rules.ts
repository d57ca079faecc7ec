import type { Id } from '../core/ids.js';
import type { Tx } from '../db/database.js';
import { AppError, assert } from '../core/app.error.js';
import type { AuditEntry, RowImage } from '../audit/audit.record.js';
import { diff } from '../audit/audit.record.js';

// The user rules (docs/api-rules.md#users), one function each, with the SQL
// that checks it. The writes in user.sql.ts are lists of these calls, made
// under the users lock (src/db/locks.ts), inside the write's transaction.

/**
 * Rule: a user's department, when given, is a live department of the same
 * tenant, share-locked until the commit, so a delete of it waits (and then
 * sees this user) or, committed first, leaves it not live here (400).
 */
export async function assertLiveDept(tx: Tx, tenantId: string, deptId: Id | null | undefined): Promise<void> {
  if (deptId === null || deptId === undefined) return;
  const [dept] = await tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${deptId} AND del_flag = '0' FOR SHARE`;
  assert(dept, 400, `deptId ${deptId} is not a live department of your tenant`);
}

/**
 * Rule: a tenant never has more live users than its accountCount (-1:
 * unlimited). Creates in one tenant run one at a time under the
 * users lock, so the count cannot be stale when the row goes in.
 * The count names the tenant itself rather than following sys_tenant's
 * row, so it reads one tenant's users (docs/scale-out.md#the-check).
 */
export async function assertAccountQuota(tx: Tx, tenantId: string): Promise<void> {
  const [quota] = await tx<{ accountCount: number; live: number }[]>`
    SELECT t.account_count AS "accountCount",
           (SELECT count(*) FROM sys_user u WHERE u.tenant_id = ${tenantId} AND u.del_flag = '0') AS live
    FROM sys_tenant t WHERE t.tenant_id = ${tenantId}`;
  if (quota && (quota.accountCount === -1 || quota.live < quota.accountCount)) return;
  throw new AccountQuotaReached(`The tenant's account quota is reached (${quota?.live} of ${quota?.accountCount} accounts)`);
}

/** The refusal of assertAccountQuota (409), its own class so a caller that means this refusal alone can catch it alone. */
export class AccountQuotaReached extends AppError {
  constructor(message: string) {
    super(409, message);
  }
}

/**
 * Locks the live users about to change, in one read however many there are.
 * Rule: the first id (in the order given) that is not a live user of the
 * tenant answers 404; the platform's superadmin account, managed at
 * bootstrap only, answers 403.
 */
export async function lockChangeableUsers(tx: Tx, tenantId: string, userIds: Id[]): Promise<Map<Id, RowImage>> {
  const rows = await tx<{ userId: Id; role: string; image: RowImage }[]>`
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

/** Rule: nobody deletes their own account. */
export function assertNotSelf(callerId: Id, ids: Id[]): void {
  assert(!ids.includes(callerId), 409, 'You cannot delete your own account');
}

/** Rule: a password change or a disable ends every session the user holds. */
export function endsUserSessions(input: { password?: string; status?: string }): boolean {
  return input.password !== undefined || input.status === '1';
}

/**
 * A PUT carrying a password writes `user.password` (no values: the record
 * says only that it changed) and, when other fields changed too,
 * `user.update` with those; without a password, one `user.update`.
 */
export function userUpdateRecords(userId: Id, before: RowImage, after: RowImage, passwordChanged: boolean): AuditEntry[] {
  const changes = diff(before, after);
  const records: AuditEntry[] = [];
  if (passwordChanged) records.push({ action: 'user.password', entityType: 'user', entityId: userId, changes: {} });
  if (!passwordChanged || Object.keys(changes).length > 0) records.push({ action: 'user.update', entityType: 'user', entityId: userId, changes });
  return records;
}
