import type { Db } from '../db/database.js';
import { today } from '../core/time.js';

// Whether a tenant's chain lets its principals act: the one rule behind
// logins, tokens and API keys alike (a tenant is suspended when it or any
// ancestor is deleted, disabled or outside its service period). It lives
// below the rooms that judge principals (auth, apikeys) so that each reads
// it from here rather than from one another.

/** The state of a tenant's chain that decides whether anyone of that tenant (a user, an API key) is honoured. */
export interface TenantState {
  tenantId: string;
  /** The nearest tenant, the user's own first, then up its ancestors, that is deleted, disabled or outside its period; null when none. */
  blockingTenantId: string | null;
  blockingTenantName: string | null;
  blockingDelFlag: string | null;
  blockingStatus: string | null;
  blockingStartTime: string | null;
  blockingEndTime: string | null;
}

/** The blocking tenant's columns of a TenantState, from BLOCKING_TENANT's `b`. */
export const BLOCKING_COLUMNS = (sql: Db) => sql`
  b.tenant_id AS "blockingTenantId", b.name AS "blockingTenantName", b.del_flag AS "blockingDelFlag",
  b.status AS "blockingStatus", b.start_time::text AS "blockingStartTime", b.end_time::text AS "blockingEndTime"`;

/**
 * The lateral join `b` that finds the blocking tenant of the tenant row `t`:
 * the tenant and its ancestors (sys_tenant.ancestors) are looked up by code
 * through the unique index, so the whole chain costs one indexed probe per
 * level inside the same statement. `day` is the date in the service's TZ.
 */
export const BLOCKING_TENANT = (sql: Db, day = today()) => sql`
  LEFT JOIN LATERAL (
    SELECT a.tenant_id, coalesce(a.tenant_name, a.company_name) AS name, a.del_flag, a.status, a.start_time, a.end_time
    FROM sys_tenant a
    WHERE a.tenant_id = ANY (string_to_array(t.ancestors, ',') || t.tenant_id)
      AND (a.del_flag <> '0' OR a.status <> '0' OR a.start_time > ${day}::date OR a.end_time < ${day}::date)
    ORDER BY array_position(string_to_array(t.ancestors, ',') || t.tenant_id, a.tenant_id) DESC
    LIMIT 1
  ) b ON true`;

/** Why nobody of this tenant may act now (it or an ancestor is deleted, disabled or outside its period), or null. */
export function tenantProblem(p: TenantState): string | null {
  if (p.blockingTenantId !== null) {
    const own = p.blockingTenantId === p.tenantId;
    const which = `${own ? 'the tenant' : `tenant ${p.tenantId}'s ancestor tenant`} ${p.blockingTenantId} "${p.blockingTenantName}"`;
    if (p.blockingDelFlag !== '0') return `${which} has been deleted`;
    if (p.blockingStatus !== '0') return `${which} is disabled`;
    if (p.blockingStartTime !== null && today() < p.blockingStartTime) return `${which}: its service period starts on ${p.blockingStartTime}`;
    return `${which}: its service period ended on ${p.blockingEndTime}`;
  }
  return null;
}
