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
 * refunds, however many refunds race: the consumption's row is locked
 * (`held`, which reads its newest version) before its refunds are added
 * to. Refunds are taken from a suspended tenant too: they only correct a
 * count.
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
        SELECT c.counter, c.period_start, c.amount - c.refunded AS "left", coalesce(${amount}::int, c.amount - c.refunded) AS give
        FROM quota_consumption c JOIN key_lock l ON l.held LEFT JOIN prior p ON true
        WHERE p.request_hash IS NULL AND c.tenant_id = ${tenantId} AND c.consumption_id = ${consumptionId}::int8
        FOR UPDATE OF c),
      taken AS (
        UPDATE quota_consumption c SET refunded = c.refunded + h.give FROM held h
        WHERE c.tenant_id = ${tenantId} AND c.consumption_id = ${consumptionId}::int8 AND h.give BETWEEN 1 AND h."left"
        RETURNING c.counter, c.period_start, c.refunded, h.give),
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
             h.counter IS NOT NULL AS found, h."left", a.response
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
