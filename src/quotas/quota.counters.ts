import type { PendingQuery, Row } from 'postgres';
import type { Db } from '../db/database.js';
import { builtOnce, plainName } from '../db/fields.js';
import { QUOTA_FIELDS } from '../tenants/tenant.fields.js';

// The counters a service consumes (docs/quotas.md#counters): six of
// quotaBo's fields are allowances, limits for the tenant's current service
// period (-1: unlimited). The other four (riskReportUsed, zr, credit, pf)
// stay stored values, as the tenant API has them. What a consume may do
// with them is in quota.rules.ts.

export const COUNTERS = ['enterpriseQuery', 'annualReportQuery', 'chainReport', 'businessReport', 'riskReport', 'merchant'] as const;
export type Counter = (typeof COUNTERS)[number];

/** -1: the allowance has no limit. */
export const UNLIMITED = -1;

const LIMITS = { counters: COUNTERS };

/**
 * The limit of the counter `counter` names (a parameter or a column) on the
 * sys_tenant row `t`, as SQL: one CASE over the allowance columns, its text
 * built once from the tenant's field list (each name checked by plainName).
 * So a consume reads the limit in its own statement, as the tenant has it at
 * that moment: a lowered limit applies at once.
 */
export function limitOf(sql: Db, counter: PendingQuery<Row[]>) {
  const cases = builtOnce(sql, LIMITS, 'limit', () =>
    COUNTERS.map((c) => `WHEN '${plainName(c, 'apiName')}' THEN t.${plainName(QUOTA_FIELDS[c].column, 'identifier')}`).join(' '),
  );
  return sql`(CASE ${counter} ${cases} END)`;
}
