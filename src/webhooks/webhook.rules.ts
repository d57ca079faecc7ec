import { AppError } from '../core/app.error.js';
import type { Db } from '../db/database.js';
import { PLATFORM_TENANT } from '../identity/roles.js';
import { inTenantSubtree, inTenantSubtreeOf } from '../identity/scope.js';
import { AddressRuleError, checkLiteral, type AddressRule } from '../outbound/outbound.address.js';

/**
 * Rule (when an endpoint is saved): an http(s) URL without a fragment or credentials;
 * http:// only where OUTBOUND_ALLOWED_CIDRS lets some address in; an IP
 * literal must pass the address rule now. A hostname is judged on every
 * connection instead (its address can change), so saving one that resolves
 * to a refused address is allowed and each attempt fails, logged.
 */
export function assertReceiverUrl(rule: AddressRule, text: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AppError(400, `url "${text}" is not a valid URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AppError(400, `url must be https:// (got ${url.protocol})`);
  if (url.protocol === 'http:' && !rule.allowed)
    throw new AppError(400, 'url must be https:// (http:// is allowed only to addresses in OUTBOUND_ALLOWED_CIDRS, and none are set)');
  if (url.hash) throw new AppError(400, 'url must not have a #fragment');
  // The URL is shown to every admin who can read the endpoint and its audit records: no secrets in it.
  if (url.username || url.password)
    throw new AppError(400, 'url must not carry a user or password: receivers authenticate deliveries by their signature');
  try {
    checkLiteral(rule, url);
  } catch (err) {
    if (err instanceof AddressRuleError) throw new AppError(400, `url refused: ${err.message}`);
    throw err;
  }
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
 * walked again for every record. A statement that reads one endpoint, whose
 * tenant it has as a value, passes `tenant` instead: a value is walked once.
 */
export const receives = (sql: Db, tenant?: string) => sql`
  (c.tenant_id = ${PLATFORM_TENANT} OR ${tenant === undefined ? inTenantSubtreeOf(sql, 'a', sql`c.tenant_id`) : inTenantSubtree(sql, 'a', tenant)})
  AND (cardinality(c.events) = 0 OR a.action = ANY(c.events) OR split_part(a.action, '.', 1) || '.*' = ANY(c.events))`;

/**
 * Rule (per endpoint row `c`): positions are gap-free, so a cursor below the
 * oldest retained position (or below the end of an emptied log) means
 * records after it were purged before this endpoint received them.
 */
export const cursorExpired = (sql: Db) => sql`
  c.cursor + 1 < COALESCE(
    (SELECT min(r.position) FROM audit_log r WHERE r.position IS NOT NULL),
    (SELECT f.last_position + 1 FROM audit_feed f WHERE f.id = 1))`;
