import type { Db } from '../db/database.js';
import type { Fragment } from '../db/page.js';
import { AppError } from '../core/app.error.js';
import { today } from '../core/time.js';
import type { Caller } from '../identity/caller.js';
import { tenantsReadableBy } from '../identity/scope.js';
import { BLOCKING_COLUMNS, BLOCKING_TENANT } from '../identity/tenant.state.js';
import { storedAnswer, type KeyOutcome, type Keyed } from './quota.idempotency.js';

// What a consume and a refund share: each is one keyed statement over the
// tenant in the path (`t`), whose final row says whether the tenant was
// found and what the Idempotency-Key's CTEs found (quota.idempotency.ts).

/**
 * The statement's `t`: the tenant in the path when the caller may read it,
 * with the state of its chain (tenant.state.ts) and `open` when nothing in
 * it is suspended. No row: not found for this caller. The key is taken for
 * any tenant found, so a suspended tenant's earlier answers still replay.
 */
export const visibleTenant = (db: Db, caller: Caller, tenantId: string, extra: Fragment) => db`
  t AS (
    SELECT t.tenant_id, b.tenant_id IS NULL AS open, ${BLOCKING_COLUMNS(db)}, ${extra}
    FROM sys_tenant t ${BLOCKING_TENANT(db, today())}
    WHERE t.tenant_id = ${tenantId} AND t.del_flag = '0' AND ${tenantsReadableBy(db, caller, 't')})`;

/** What a keyed statement's final row says. */
export type Outcome = KeyOutcome & { tenantId: string | null; response: unknown };

/** 404 for a tenant not found, then the key's refusals; the stored answer to replay, or undefined when this request is the key's first. */
export function foundAndKeyed(row: Outcome, tenantId: string, keyed: Keyed): unknown {
  if (!row.tenantId) throw new AppError(404, `Tenant ${tenantId} not found`);
  return storedAnswer(row, keyed);
}

export type Answer<T> = { replayed: boolean; data: T };
