import type { Tx } from './database.js';

/** First key of every advisory lock we take; the second key narrows it. */
export const LOCK = {
  migrations: 7_100,
  bootstrap: 7_101,
  /** Per tenant: user writes (account quota, SCIM userName and group membership). */
  users: 7_102,
  /** Per tenant and Idempotency-Key: one request with a key at a time (src/quotas/quota.idempotency.ts). */
  quotaKeys: 7_103,
  /** On Citus: the writes of the platform's tables (tenants, packages), one at a time (src/db/citus.ts). */
  platformWrites: 7_104,
} as const;

/**
 * Serialises one tenant's user writes: two creates racing for the last
 * account become one-after-the-other, so the quota's count is never stale,
 * and a SCIM write reads the users it then changes (a group's members, a
 * name compared without case) with nobody changing them meanwhile. Released
 * at commit or rollback. Department writes do not take it: they lock the
 * rows their rules read (src/depts/dept.locks.ts), and a user placed in a
 * department share-locks that department (src/users/user.rules.ts).
 */
export async function lockUsers(tx: Tx, tenantId: string): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(${LOCK.users}, hashtext(${tenantId}))`;
}
