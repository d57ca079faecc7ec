import type { Db } from '../db/database.js';
import { builtOnce } from '../db/fields.js';
import { AppError } from '../core/app.error.js';
import { auditRecords } from '../audit/audit.record.js';
import type { Caller } from '../identity/caller.js';
import { tenantsReadableBy } from '../identity/scope.js';
import type { TenantState } from '../identity/tenant.state.js';
import { COUNTERS, limitOf, type Counter } from './quota.counters.js';
import { keepAnswer, keyCtes, onceMore, type Keyed } from './quota.idempotency.js';
import { foundAndKeyed, visibleTenant, type Answer, type Outcome } from './quota.keyed.js';
import { assertMayConsume, periodStartOf, reached, remaining, remainingSql, THRESHOLDS, withinLimit } from './quota.rules.js';
import type { Consumed } from './quota.schema.js';

// What a tenant's counters have used, and the consume that counts
// (docs/quotas.md), guarded by the limit in the very statement that counts.
// It is one statement in its own transaction: it finds the tenant, takes the
// Idempotency-Key, changes the counter, the ledger and the key together and
// writes the threshold records, so a counter's row is locked only while that
// one statement runs. Every statement names the tenant. The rules it is made
// of are in quota.rules.ts; the refund is in quota.refund.sql.ts, what both
// share in quota.keyed.ts.

/**
 * Every counter of one of the tenant's periods (default: the current one).
 * The current period shows each limit as the tenant has it now; a past one
 * the limit its last consume counted against, and remaining 0: nothing more
 * is consumed in it.
 */
export async function usageOf(db: Db, caller: Caller, tenantId: string, periodStart?: string) {
  const rows = await db<{ counter: Counter; limit: number; used: string; periodStart: string; current: boolean }[]>`
    SELECT c.counter, p.period_start::text AS "periodStart", p.current, coalesce(u.used, 0) AS used,
           CASE WHEN p.current THEN ${limitOf(db, db`c.counter`)} ELSE coalesce(u.last_limit, ${limitOf(db, db`c.counter`)}) END AS "limit"
    FROM sys_tenant t
    CROSS JOIN LATERAL (SELECT coalesce(${periodStart ?? null}::date, ${periodStartOf(db)}) AS period_start) p0
    CROSS JOIN LATERAL (SELECT p0.period_start, p0.period_start = ${periodStartOf(db)} AS current) p
    CROSS JOIN unnest(${COUNTERS as unknown as string[]}::text[]) WITH ORDINALITY AS c(counter, n)
    LEFT JOIN quota_usage u ON u.tenant_id = ${tenantId} AND u.counter = c.counter AND u.period_start = p.period_start
    WHERE t.tenant_id = ${tenantId} AND t.del_flag = '0' AND ${tenantsReadableBy(db, caller, 't')}
    ORDER BY c.n`;
  if (rows.length === 0) throw new AppError(404, `Tenant ${tenantId} not found`);
  return {
    tenantId,
    periodStart: rows[0]!.periodStart,
    counters: rows.map(({ counter, limit, used, current }) => ({
      counter,
      limit,
      used: Number(used),
      remaining: remaining(limit, Number(used), current),
    })),
  };
}

// The parts of the consume's statement that hold no value of the request:
// written once as text (builtOnce) instead of as fragments and parameters
// that the driver would build and bind again for every consume
// (docs/benchmark.md#quota-consumes-read).
const CONSUME = {};

/**
 * What the count inserts after the tenant's code (a parameter of its own, so
 * the statement names its tenant): the new row's threshold bits; and the guard of the conflict's update: the
 * limit as the statement read it (`t.lim`, carried in by the proposed row
 * as EXCLUDED.last_limit), checked on the row PostgreSQL has locked, newest
 * version, so it sees every committed consume. `crossed_now` holds the bits
 * reached by this count and not by the row's count before it (a lowered
 * limit crosses nothing), nor announced already.
 */
const counting = (db: Db) =>
  builtOnce(db, CONSUME, 'counting', () => {
    const [next, limit] = ['(u.used + EXCLUDED.used)', 'EXCLUDED.last_limit'];
    return `
        t.counter, t.period_start, t.amount, t.lim, ${reached('t.amount', 't.lim')}, ${reached('t.amount', 't.lim')}
        FROM t JOIN key_lock l ON l.held LEFT JOIN prior p ON true
        WHERE t.open AND p.request_hash IS NULL AND ${withinLimit('t.amount', 't.lim')}
        ON CONFLICT (tenant_id, counter, period_start) DO UPDATE SET
          used = ${next},
          last_limit = ${limit},
          crossed = u.crossed | ${reached(next, limit)},
          crossed_now = ${reached(next, limit)} & ~${reached('u.used', limit)} & ~u.crossed
        WHERE ${withinLimit(next, limit)}
        RETURNING u.counter, u.period_start, u.used, u.crossed_now, u.last_limit AS lim`;
  });

/** The consume's answer from its counted row and ledger row. */
const consumeAnswer = (db: Db) =>
  builtOnce(
    db,
    CONSUME,
    'answer',
    () => `
        SELECT jsonb_build_object(
          'consumptionId', l.consumption_id::text, 'counter', c.counter, 'amount', l.amount, 'limit', c.lim, 'used', c.used,
          'remaining', ${remainingSql('c.used', 'c.lim')}) AS response
        FROM counted c, ledger l`,
  );

/** One quota.threshold record per threshold the count crossed now: (entity_id, changes). */
const crossedRecords = (db: Db) =>
  builtOnce(
    db,
    CONSUME,
    'thresholds',
    () => `
          SELECT c.counter, jsonb_build_object('counter', c.counter, 'percent', th.percent, 'limit', c.lim, 'used', c.used)
          FROM counted c, (VALUES ${THRESHOLDS.map((th) => `(${th.bit}, ${th.percent})`).join(', ')}) th(bit, percent)
          WHERE c.crossed_now & th.bit <> 0`,
  );

/**
 * Rule: never more than the limit, under any concurrency, on any number of
 * nodes. One statement checks and counts: the row of the tenant's counter
 * and period is created with `amount`, or has `amount` added, and either
 * only while the result stays within the limit read in the same statement.
 * PostgreSQL evaluates an ON CONFLICT update's condition on the row it has
 * locked, newest version, so concurrent consumes queue on the row and each
 * sees the others' counts. A consume over the limit counts nothing and
 * keeps no key: 409 naming what is left.
 *
 * The same statement writes the ledger row, the answer kept under the key,
 * and a quota.threshold record for each threshold this consume crossed
 * first (`crossed_now`: the bits reached now that the row had not).
 */
export async function consume(
  db: Db,
  caller: Caller,
  keyed: Keyed,
  input: { counter: Counter; amount: number; reference: string | null },
): Promise<Answer<Consumed>> {
  const { tenantId } = keyed;
  const { counter, amount, reference } = input;
  const actor = { ...caller, tenantId, userTenantId: caller.tenantId };
  // The request's values enter once each, as columns of `t`; the rest of the text is written once (above).
  const values = db`${counter}::text AS counter, ${amount}::int AS amount, ${periodStartOf(db)} AS period_start, ${limitOf(db, db`${counter}::text`)} AS lim`;
  const [row] = await onceMore(
    () => db<(Outcome & TenantState)[]>`
      WITH ${visibleTenant(db, caller, tenantId, values)},
      ${keyCtes(db, keyed)},
      counted AS (
        INSERT INTO quota_usage AS u (tenant_id, counter, period_start, used, last_limit, crossed, crossed_now)
        SELECT ${tenantId}, ${counting(db)}),
      ledger AS (
        INSERT INTO quota_consumption (tenant_id, counter, period_start, amount, reference, create_by)
        SELECT ${tenantId}, c.counter, c.period_start, ${amount}, ${reference}, ${caller.userName} FROM counted c
        RETURNING consumption_id, amount),
      answer AS (${consumeAnswer(db)}),
      ${keepAnswer(db, keyed)}
      ${auditRecords(db, actor, 'quota.threshold', 'quota', crossedRecords(db))}
      SELECT t.tenant_id AS "tenantId", ${tenantStateColumns(db)}, l.held, p.request_hash AS "priorHash", p.response AS "priorResponse",
             a.response
      FROM (SELECT) one LEFT JOIN t ON true LEFT JOIN key_lock l ON true LEFT JOIN prior p ON true LEFT JOIN answer a ON true`,
  );
  const stored = foundAndKeyed(row!, tenantId, keyed);
  if (stored !== undefined) return { replayed: true, data: stored as Consumed };
  assertMayConsume(row!, tenantId);
  if (row!.response === null) {
    const left = (await usageOf(db, caller, tenantId)).counters.find((c) => c.counter === counter)!.remaining;
    throw new AppError(409, `Quota ${counter} of tenant ${tenantId} has ${left} left; ${amount} asked, nothing consumed`);
  }
  return { replayed: false, data: row!.response as Consumed };
}

/** The TenantState columns of `t`, as visibleTenant named them. */
const tenantStateColumns = (db: Db) =>
  builtOnce(
    db,
    CONSUME,
    'state',
    () => 't."blockingTenantId", t."blockingTenantName", t."blockingDelFlag", t."blockingStatus", t."blockingStartTime", t."blockingEndTime"',
  );
