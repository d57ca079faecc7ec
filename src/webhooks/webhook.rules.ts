import type { Db } from '../db/database.js';
import type { Fragment } from '../db/page.js';
import { PLATFORM_TENANT } from '../identity/roles.js';
import { inTenantSubtree, inTenantSubtreeOf } from '../identity/scope.js';

/** An endpoint as `receives` takes it by value: its tenant and its filter. */
export interface EndpointFilter {
  tenantId: string;
  events: string[];
}

/**
 * Rule: the records an endpoint (the row `c`) receives are those of its
 * tenant and of every tenant below it (the platform tenant's endpoints: all),
 * whose action its filter names or whose prefix (`dept.*`) it lists; an
 * empty filter takes all. `a` is the audit_log row.
 *
 * The subtree is walked down from the endpoint's tenant (src/identity/scope.ts).
 * Walked from the column `c.tenant_id`, it is made once per endpoint only when
 * `a` is read in a query level below `c`'s (an EXISTS that PostgreSQL does not
 * merge into the statement, a subquery); in the level of `c` itself it would be
 * walked again for every record. A statement that has the endpoint as values
 * (its tenant and filter, `endpoint`) reads no `c` at all: a value is walked
 * once, and on Citus the statement then reads audit_log alone, which it can
 * plan over every shard (docs/scale-out.md#across-tenants-by-design).
 */
export const receives = (sql: Db, endpoint?: EndpointFilter) =>
  endpoint === undefined
    ? sql`
  (c.tenant_id = ${PLATFORM_TENANT} OR ${inTenantSubtreeOf(sql, 'a', sql`c.tenant_id`)}) AND ${filterTakes(sql, sql`c.events`)}`
    : sql`
  (${endpoint.tenantId}::text = ${PLATFORM_TENANT} OR ${inTenantSubtree(sql, 'a', endpoint.tenantId)})
  AND ${filterTakes(sql, sql`${endpoint.events}::text[]`)}`;

const filterTakes = (sql: Db, events: Fragment) =>
  sql`(cardinality(${events}) = 0 OR a.action = ANY(${events}) OR split_part(a.action, '.', 1) || '.*' = ANY(${events}))`;

/** Where retention and the feed stand, read once as values for the rules below. */
export interface FeedBounds {
  /** The oldest position retention kept; null for an empty log. */
  oldest: string | null;
  /** The last published position. */
  last: string;
}

/**
 * Rule (per endpoint row `c`): positions are gap-free, so a cursor below the
 * oldest retained position (or below the end of an emptied log) means
 * records after it were purged before this endpoint received them. With
 * `bounds` the two positions are values read before (Citus: the statement
 * over every endpoint then reads no audit_log).
 */
export const cursorExpired = (sql: Db, bounds?: FeedBounds) =>
  bounds === undefined
    ? sql`
  c.cursor + 1 < COALESCE(
    (SELECT min(r.position) FROM audit_log r WHERE r.position IS NOT NULL),
    (SELECT f.last_position + 1 FROM audit_feed f WHERE f.id = 1))`
    : sql`c.cursor + 1 < COALESCE(${bounds.oldest}::bigint, ${bounds.last}::bigint + 1)`;
