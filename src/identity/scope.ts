import type { Db } from '../db/database.js';
import { isSuperadmin, type Caller } from './caller.js';

// A tenant's scope is the tenant itself and every tenant below it. Every
// check of "may this caller see or change that tenant's data" is one of
// the two functions here: the SQL predicate for queries, the plain check
// for a row already read.

/**
 * Rule: the rows of `alias` (a sys_tenant row: tenant_id and ancestors, the
 * comma-separated codes above it) that are `root` or lie below it.
 */
export function inTenantSubtree(sql: Db, alias: string, root: string) {
  const t = sql(alias);
  return sql`(${t}.tenant_id = ${root} OR ${root} = ANY (string_to_array(${t}.ancestors, ',')))`;
}

/** Rule: a tenant whose ancestor path is `ancestors` lies strictly below `root`. */
export function isStrictlyBelow(ancestors: string, root: string): boolean {
  return ancestors.split(',').includes(root);
}

/**
 * Rule: the tenants whose data `caller` may read: superadmin all; an admin
 * its own tenant and every tenant below it; a user its own tenant only.
 * `alias` names the sys_tenant row in the query.
 */
export function tenantsReadableBy(sql: Db, caller: Caller, alias: string) {
  if (isSuperadmin(caller)) return sql`true`;
  if (caller.role === 'admin') return inTenantSubtree(sql, alias, caller.tenantId);
  return sql`${sql(alias)}.tenant_id = ${caller.tenantId}`;
}
