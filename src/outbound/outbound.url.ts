import { AppError, assert } from '../core/app.error.js';
import { AddressRuleError, checkLiteral, type AddressRule } from './outbound.address.js';

// What a URL this service will call may be, checked when it is saved: a
// webhook endpoint's `url` (docs/webhooks.md#addresses) and an SSO
// connection's `issuer` (docs/sso.md#connections). The write functions call
// it, so a write is refused whichever way it is reached.

/**
 * Rule (on save): an absolute http(s) URL; http:// only where
 * OUTBOUND_ALLOWED_CIDRS lets some address in; no #fragment; no user or
 * password (the URL is shown to every admin who can read its entity and its
 * audit records: no secrets in it); no query when `query: false` (a URL the
 * service appends a path to); an IP literal must pass the address rule now.
 * A hostname is judged on every connection instead (its address can
 * change), so saving one that resolves to a refused address is allowed and
 * each call to it fails, logged. `field` is the name the messages give it.
 */
export function assertOutboundUrl(rule: AddressRule, text: string, field: string, { query = true } = {}): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AppError(400, `${field} "${text}" is not a valid URL`);
  }
  assert(url.protocol === 'https:' || url.protocol === 'http:', 400, `${field} must be https:// (got ${url.protocol})`);
  assert(
    url.protocol === 'https:' || rule.allowed,
    400,
    `${field} must be https:// (http:// is allowed only to addresses in OUTBOUND_ALLOWED_CIDRS, and none are set)`,
  );
  assert(query || !url.search, 400, `${field} must have no query`);
  assert(!url.hash, 400, `${field} must not have a #fragment`);
  assert(!url.username && !url.password, 400, `${field} must not carry a user or password: it is shown in every read and audit record`);
  try {
    checkLiteral(rule, url);
  } catch (err) {
    if (err instanceof AddressRuleError) throw new AppError(400, `${field} refused: ${err.message}`);
    throw err;
  }
}
