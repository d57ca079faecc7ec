import type { Db } from '../db/database.js';
import type { Fragment } from '../db/page.js';
import { isSuperadmin, type Caller } from './caller.js';
import { isOnCitus } from '../db/citus.js';

// A tenant's scope is the tenant itself and every tenant below it. Every
// check of "may this caller see or change that tenant's data" is one of
// the functions here: the SQL predicates for queries, the plain check
// for a row already read.

/**
 * Rule: the rows of `alias` (a sys_tenant row) that are `root` or lie below
 * it. The same set as "root is in their ancestors path", found by walking
 * down from `root` through the parent index (tenant_parent never changes, so
 * the parent links and the paths agree), so the cost follows the size of the
 * subtree, not of the whole tenant table: reading and splitting every
 * tenant's path made a small tenant's list grow with the table
 * (docs/benchmark.md#reads-across-10000-tenants).
 */
export function inTenantSubtree(sql: Db, alias: string, root: string) {
  return subtreeWalk(sql, alias, root);
}

/**
 * inTenantSubtree with a root the statement reads itself: `root` is an
 * expression of the statement, such as a column of another of its rows (a
 * webhook endpoint's tenant), never input. `alias` may name any row with a
 * tenant_id. The walk is computed once for each value of `root`'s row when
 * that row belongs to an enclosing query level (an InitPlan of the level the
 * predicate is in); in the same level as `alias`, it is walked again for
 * each row tested. `root` is read where the walk's own names (subtree, c, p)
 * are not yet in scope, so it may use those aliases itself.
 */
export function inTenantSubtreeOf(sql: Db, alias: string, root: Fragment) {
  return subtreeWalk(sql, alias, root);
}

function subtreeWalk(sql: Db, alias: string, root: string | Fragment) {
  // Citus plans a recursive CTE only when it names a value of the distribution column, even one that reads a
  // reference table alone, in any statement that reads a distributed table. There the subtree is the tenants
  // whose path holds the root (ancestors never change): a read of every tenant's path instead of a walk.
  if (isOnCitus())
    return sql`${sql(alias)}.tenant_id = ANY (ARRAY(
      SELECT s.tenant_id FROM sys_tenant s
      WHERE s.tenant_id = ${root}::text OR ',' || s.ancestors || ',' LIKE '%,' || ${root}::text || ',%'))`;
  // An array computed once (an InitPlan), so the codes probe the unique index on tenant_id; as an IN
  // subquery the planner guessed the walk's size and hashed it against a scan of every tenant.
  return sql`${sql(alias)}.tenant_id = ANY (ARRAY(
    WITH RECURSIVE subtree (tenant_id) AS (
      SELECT ${root}::text
      UNION ALL
      SELECT c.tenant_id FROM sys_tenant c JOIN subtree p ON c.tenant_parent = p.tenant_id)
    SELECT tenant_id FROM subtree))`;
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
