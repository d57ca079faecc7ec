import { createHash } from 'node:crypto';
import { acrossTenants, isOnCitus } from '../db/citus.js';
import { violatesUnique } from '../db/pg.errors.js';
import type { Db } from '../db/database.js';
import type { Fragment } from '../db/page.js';
import { LOCK } from '../db/locks.js';
import { AppError } from '../core/app.error.js';

// Idempotency-Key on consumes and refunds (docs/quotas.md#idempotency), as
// the IETF draft has it: a key belongs to the tenant in the path, whoever
// calls; the same key with the same body answers the first answer again and
// changes nothing more; with another body 422; while the first request with
// it still runs 409. The key is kept in the statement that makes the change
// it answers, so both commit together or neither does: a refused request
// keeps no key, and there is no separate store whose expiry could let a
// retry through.

/** How long a key is kept: at least the 7 days promised, plus a day for the purge's pace and clocks that disagree. */
export const KEY_DAYS = 8;

/**
 * What "the same body" means: the operation and its fields, each named,
 * absent ones as null, so key order and an omitted optional field do not
 * make two equal requests differ.
 */
export function requestHash(operation: 'consume' | 'refund', fields: Record<string, string | number | null>): Buffer {
  const canonical = JSON.stringify([
    operation,
    ...Object.keys(fields)
      .sort()
      .map((name) => [name, fields[name]]),
  ]);
  return createHash('sha256').update(canonical).digest();
}

export interface Keyed {
  tenantId: string;
  key: string;
  hash: Buffer;
}

/**
 * The key's two CTEs, after the statement's `t` (one row: the tenant, when
 * the caller may reach it): `key_lock` takes the key's lock
 * without waiting (held: false while another request with the key runs),
 * and `prior` is the key's stored answer. The statement's change must read
 * both, so that it comes after them: only a row of `t JOIN key_lock l ON
 * l.held LEFT JOIN prior p ON true WHERE p.request_hash IS NULL` may change
 * anything.
 *
 * The lock is the transaction's, so a key's requests run one at a time. The
 * statement's snapshot is taken before it gets the lock, so a first request
 * that committed in between is not in `prior`: its kept row then refuses
 * this one's (quota_idempotency_pkey), and `onceMore` runs it again.
 */
export function keyCtes(db: Db, { tenantId, key }: Keyed): Fragment {
  return db`
    key_lock AS (SELECT pg_try_advisory_xact_lock(${LOCK.quotaKeys}, hashtext(${tenantId} || ' ' || ${key})) AS held FROM t),
    prior AS (
      SELECT k.request_hash, k.response FROM quota_idempotency k, key_lock l
      WHERE l.held AND k.tenant_id = ${tenantId} AND k.idem_key = ${key})`;
}

/** The CTE that keeps the statement's `answer` (one row: response) under the key. */
export function keepAnswer(db: Db, { tenantId, key, hash }: Keyed): Fragment {
  return db`
    kept AS (
      INSERT INTO quota_idempotency (tenant_id, idem_key, request_hash, response)
      SELECT ${tenantId}, ${key}, ${hash}, a.response FROM answer a)`;
}

/** What the key's CTEs found, as the statement's final row gives them. */
export interface KeyOutcome {
  held: boolean | null;
  priorHash: Buffer | null;
  priorResponse: unknown;
}

/**
 * The stored answer to replay, or undefined when the request is the key's
 * first. 409 while another request with the key runs; 422 when the key
 * answered another body.
 */
export function storedAnswer(outcome: KeyOutcome, { key, hash }: Keyed): unknown {
  if (!outcome.held) throw new AppError(409, `A request with Idempotency-Key "${key}" is still running; repeat it once that one has answered`);
  if (outcome.priorHash === null) return undefined;
  if (!hash.equals(outcome.priorHash))
    throw new AppError(422, `Idempotency-Key "${key}" was used with another request body; use a new key for a new operation`);
  return outcome.priorResponse;
}

/** Runs a keyed statement once more when its kept row met a first request's that committed after its snapshot. */
export async function onceMore<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!violatesUnique(err, 'quota_idempotency_pkey')) throw err;
    return run();
  }
}

/**
 * Drops the keys older than KEY_DAYS, every tenant's, in batches: each
 * tenant's oldest keys are found through its (tenant_id, create_time) index,
 * so a run costs one probe per tenant plus what it deletes.
 */
export async function purgeKeys(sql: Db, batch = 1000): Promise<number> {
  let total = 0;
  for (;;) {
    // On Citus each shard finds its tenants' old keys by its own index; a lateral walk per tenant from the
    // reference table with a LIMIT is a shape Citus cannot push down.
    const deleted = await acrossTenants(sql, (db) =>
      isOnCitus()
        ? db`
      DELETE FROM quota_idempotency WHERE (tenant_id, idem_key) IN (
        SELECT q.tenant_id, q.idem_key FROM quota_idempotency q
        WHERE q.create_time < now() - make_interval(days => ${KEY_DAYS})
        LIMIT ${batch})`
        : db`
      DELETE FROM quota_idempotency WHERE (tenant_id, idem_key) IN (
        SELECT k.tenant_id, k.idem_key FROM sys_tenant t CROSS JOIN LATERAL (
          SELECT q.tenant_id, q.idem_key FROM quota_idempotency q
          WHERE q.tenant_id = t.tenant_id AND q.create_time < now() - make_interval(days => ${KEY_DAYS})
          LIMIT ${batch}) k
        LIMIT ${batch})`,
    );
    total += deleted.count;
    if (deleted.count < batch) return total;
  }
}
