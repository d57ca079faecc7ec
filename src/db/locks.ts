import type { Tx } from './database.js';

/** First key of every advisory lock we take; the second key narrows it. */
export const LOCK = {
  migrations: 7_100,
  bootstrap: 7_101,
  /** Per tenant: department and user writes (tree shape, user placement, account quota). */
  organisation: 7_102,
} as const;

/**
 * Serialises the writes that change one tenant's organisation: department
 * creates, moves and deletes, and user writes. Two opposite moves, a create
 * under a department being deleted, or two user creates racing for the last
 * account all become one-after-the-other, so no interleaving can produce a
 * cycle, an orphan or an account over quota. Released at commit or rollback.
 */
export async function lockOrganisation(tx: Tx, tenantId: string): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(${LOCK.organisation}, hashtext(${tenantId}))`;
}
