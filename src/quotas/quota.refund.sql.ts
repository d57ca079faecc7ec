import type { Db } from '../db/database.js';
import { AppError } from '../core/app.error.js';
import type { Caller } from '../identity/caller.js';
import { keepAnswer, keyCtes, onceMore, type Keyed } from './quota.idempotency.js';
import { foundAndKeyed, visibleTenant, type Answer, type Outcome } from './quota.keyed.js';
import type { Refunded } from './quota.schema.js';

// A refund (docs/quotas.md#refunds): one keyed statement, like a consume
// (quota.usage.sql.ts), that gives back to the period the consumption was
// taken from.

/**
 * Gives back `amount` (default: all it still holds) of a consumption, to the
 * period it was taken from, never more than it took less its earlier
 * refunds, however many refunds race: `taken` locks the consumption's row
 * (`n`, FOR UPDATE, which reads its newest version) and adds to its
 * refunds in one step. `held` only reads what is left, for the 400's
 * message. Refunds are taken from a suspended tenant too: they only correct
 * a count.
 *
 * The locking read sits inside the UPDATE, not in a CTE of its own: on Citus
 * (13.2) a FOR UPDATE CTE that an UPDATE reads, in a statement that also
 * INSERTs (`kept`), reached the worker as an intermediate result it could
 * not read ("missing data for column"); inside the UPDATE the whole step
 * runs on the tenant's shard.
 */
export async function refund(
  db: Db,
  caller: Caller,
  keyed: Keyed,
  input: { consumptionId: string; amount: number | null },
): Promise<Answer<Refunded>> {
  const { tenantId } = keyed;
  const { consumptionId, amount } = input;
  const [row] = await onceMore(
    () => db<(Outcome & { found: boolean | null; left: number | null })[]>`
      WITH ${visibleTenant(db, caller, tenantId, db`true AS visible`)},
      ${keyCtes(db, keyed)},
      held AS (
        SELECT c.amount - c.refunded AS "left" FROM quota_consumption c
        WHERE c.tenant_id = ${tenantId} AND c.consumption_id = ${consumptionId}::int8),
      taken AS (
        UPDATE quota_consumption c SET refunded = c.refunded + n.give
        FROM (
          SELECT n.consumption_id, n.amount - n.refunded AS "left", coalesce(${amount}::int, n.amount - n.refunded) AS give
          FROM quota_consumption n WHERE n.tenant_id = ${tenantId} AND n.consumption_id = ${consumptionId}::int8
          FOR UPDATE) n, key_lock l LEFT JOIN prior p ON true
        WHERE l.held AND p.request_hash IS NULL AND c.tenant_id = ${tenantId} AND c.consumption_id = n.consumption_id
          AND n.give BETWEEN 1 AND n."left"
        RETURNING c.counter, c.period_start, c.refunded, n.give),
      restored AS (
        UPDATE quota_usage u SET used = u.used - k.give FROM taken k
        WHERE u.tenant_id = ${tenantId} AND u.counter = k.counter AND u.period_start = k.period_start
        RETURNING u.used),
      answer AS (
        SELECT jsonb_build_object('consumptionId', ${consumptionId}::text, 'counter', k.counter, 'amount', k.give, 'refunded', k.refunded, 'used', r.used)
          AS response
        FROM taken k, restored r),
      ${keepAnswer(db, keyed)}
      SELECT t.tenant_id AS "tenantId", l.held, p.request_hash AS "priorHash", p.response AS "priorResponse",
             h."left" IS NOT NULL AS found, h."left", a.response
      FROM (SELECT) one LEFT JOIN t ON true LEFT JOIN key_lock l ON true LEFT JOIN prior p ON true
        LEFT JOIN held h ON true LEFT JOIN answer a ON true`,
  );
  const stored = foundAndKeyed(row!, tenantId, keyed);
  if (stored !== undefined) return { replayed: true, data: stored as Refunded };
  if (!row!.found) throw new AppError(404, `Consumption ${consumptionId} not found for tenant ${tenantId}`);
  if (row!.response === null) {
    throw new AppError(400, `Consumption ${consumptionId} holds ${row!.left} that can be refunded; ${amount ?? row!.left} asked`);
  }
  return { replayed: false, data: row!.response as Refunded };
}
