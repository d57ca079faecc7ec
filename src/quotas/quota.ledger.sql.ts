import type { Row } from 'postgres';
import type { Db } from '../db/database.js';
import { fromRow, selectList } from '../db/fields.js';
import { AppError } from '../core/app.error.js';
import { pageOf, type PageQuery } from '../db/page.js';
import type { Caller } from '../identity/caller.js';
import { tenantsReadableBy } from '../identity/scope.js';
import type { Counter } from './quota.counters.js';
import { CONSUMPTION_FIELDS } from './quota.fields.js';

// The usage ledger (docs/quotas.md#the-ledger): one row per consumption,
// written by the consume's own statement (quota.usage.sql.ts), its refunds
// added up in `refunded`. Read newest first.

/** One page of a tenant's consumptions, of one counter or all, of one period or all; 404 unless the caller may read the tenant. */
export async function ledgerOf(db: Db, caller: Caller, tenantId: string, query: PageQuery & { counter?: Counter; periodStart?: string }) {
  const [tenant] =
    await db`SELECT 1 FROM sys_tenant t WHERE t.tenant_id = ${tenantId} AND t.del_flag = '0' AND ${tenantsReadableBy(db, caller, 't')}`;
  if (!tenant) throw new AppError(404, `Tenant ${tenantId} not found`);
  const page = await pageOf<Row>(
    db,
    {
      select: selectList(db, 'c', CONSUMPTION_FIELDS),
      // Each filter only when asked for, so the plan of each form uses its index.
      from: db`quota_consumption c WHERE c.tenant_id = ${tenantId}
        ${query.counter ? db`AND c.counter = ${query.counter}` : db``}
        ${query.periodStart ? db`AND c.period_start = ${query.periodStart}::date` : db``}`,
      orderBy: db`c.consumption_id DESC`,
    },
    query,
  );
  return { total: page.total, rows: page.rows.map((r) => fromRow(r, CONSUMPTION_FIELDS)) };
}
