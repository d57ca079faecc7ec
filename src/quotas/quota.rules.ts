import type { Db } from '../db/database.js';
import { AppError } from '../core/app.error.js';
import { timeZoneName } from '../core/time.js';
import { tenantProblem, type TenantState } from '../identity/tenant.state.js';
import { UNLIMITED } from './quota.counters.js';

// The quota rules (docs/quotas.md), one function each, as the SQL that
// checks it where a statement does: the period a consume counts in, the
// limit it never passes, the thresholds it records, what remains, and who
// may consume. The consume's statement (quota.usage.sql.ts) is made of
// these pieces; what a refund may give back is its own statement's
// (quota.refund.sql.ts); the Idempotency-Key's rules are in quota.idempotency.ts.
//
// The text functions below (withinLimit, reached, remainingSql) write SQL
// over expressions of this room's own statements, never input, so their
// text can be built once (builtOnce) and reused by every consume.

/**
 * Rule: the first day of the tenant `t`'s current service period: its
 * startTime, or the day it was created (in the service's time zone) when it
 * has none. A renewal (a new startTime) starts a new period, counted from 0.
 */
export function periodStartOf(sql: Db) {
  return sql`COALESCE(t.start_time, (t.create_time AT TIME ZONE ${timeZoneName()})::date)`;
}

/** Rule: never more than the limit: `used` stays within `limit`, or the limit is UNLIMITED. */
export const withinLimit = (used: string, limit: string) => `(${limit} = ${UNLIMITED} OR ${used} <= ${limit})`;

/** Thresholds, as bits of quota_usage.crossed: the consume that crosses one records it, once per counter and period. */
export const THRESHOLDS = [
  { bit: 1, percent: 80 },
  { bit: 2, percent: 100 },
] as const;

/**
 * Rule: the threshold bits `used` has reached of `limit` (none when
 * unlimited or 0). In bigint: a limit may be as large as an integer holds,
 * and four times it is not.
 */
export const reached = (used: string, limit: string) =>
  `(CASE WHEN ${limit} > 0 AND ${used}::int8 * 5 >= ${limit}::int8 * 4 THEN 1 ELSE 0 END | CASE WHEN ${limit} > 0 AND ${used} >= ${limit} THEN 2 ELSE 0 END)`;

/**
 * Rule: what remains of a counter: null when unlimited, never below 0 (a
 * lowered limit can be below what is used), and 0 in a past period, where
 * nothing more is consumed. remainingSql is the same rule for the current
 * period in SQL, for the consume's answer.
 */
export const remaining = (limit: number, used: number, current: boolean): number | null =>
  !current ? 0 : limit === UNLIMITED ? null : Math.max(limit - used, 0);
export const remainingSql = (used: string, limit: string) => `CASE WHEN ${limit} = ${UNLIMITED} THEN NULL ELSE greatest(${limit} - ${used}, 0) END`;

/**
 * Rule: a suspended tenant (it or an ancestor deleted, disabled or outside
 * its period) consumes nothing: 403. Its refunds are still taken: they only
 * correct a count.
 */
export function assertMayConsume(state: TenantState, tenantId: string): void {
  const problem = tenantProblem(state);
  if (problem) throw new AppError(403, `Quota of tenant ${tenantId} cannot be consumed: ${problem}`);
}
