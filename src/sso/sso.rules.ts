import { AppError, assert } from '../core/app.error.js';

// The rules of a connection's URLs and ids (docs/sso.md#connections), and of
// the values the flow compares. Plain functions: no database, no request.

/** A connection's `id` as the API and the redirect URI carry it: `<tenantId>-<n>`. */
export interface ConnectionKey {
  tenantId: string;
  connectionId: number;
}

/** The tenant and number of a connection id, or undefined when it is not one (then: 404). */
export function parseConnectionId(id: string): ConnectionKey | undefined {
  const match = /^([0-9]{6})-([1-9][0-9]{0,15})$/.exec(id);
  return match ? { tenantId: match[1]!, connectionId: Number(match[2]) } : undefined;
}

/** Where a browser may be sent back to: https://, or http:// on the machine the browser runs on (a developer's SPA). */
function isReturnUrl(url: URL): boolean {
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]');
}

/**
 * Rule (on save): every return URL is absolute, https:// (or http:// on
 * localhost, 127.0.0.1 or [::1], any port), without a fragment or
 * credentials, and carries no `code`, `state` or `error` of its own, which
 * the callback adds. A sign-in names one of them exactly.
 */
export function assertReturnUrls(urls: string[]): void {
  for (const text of urls) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new AppError(400, `returnUrls: "${text}" is not an absolute URL`);
    }
    assert(isReturnUrl(url), 400, `returnUrls: "${text}" must be https://, or http:// on localhost or 127.0.0.1`);
    assert(!url.hash && !url.username && !url.password, 400, `returnUrls: "${text}" must have no #fragment and no user or password`);
    for (const reserved of ['code', 'state', 'error'])
      assert(!url.searchParams.has(reserved), 400, `returnUrls: "${text}" must not carry "${reserved}"; the sign-in adds it`);
  }
}

/** Rule: the issuer is an http(s) URL without a query, fragment or credentials (discovery appends /.well-known/openid-configuration). */
export function assertIssuerShape(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AppError(400, `issuer "${text}" is not a valid URL`);
  }
  assert(url.protocol === 'https:' || url.protocol === 'http:', 400, `issuer must be https:// (got ${url.protocol})`);
  assert(!url.search && !url.hash && !url.username && !url.password, 400, 'issuer must have no query, #fragment, user or password');
  return url;
}

/** The domain of an email address, lower-cased; undefined when it has none. */
function domainOf(email: string): string | undefined {
  const at = email.lastIndexOf('@');
  return at > 0 && at < email.length - 1 ? email.slice(at + 1).toLowerCase() : undefined;
}

/** Rule: an email links a person only when the provider says it is verified and its domain is one the connection vouches for. */
export function emailVouchedFor(claims: Record<string, unknown>, domains: string[]): string | undefined {
  const email = claims.email;
  // A boolean in the standard; some providers (AWS Cognito) send the string.
  const verified = claims.email_verified === true || claims.email_verified === 'true';
  if (typeof email !== 'string' || !verified) return undefined;
  const domain = domainOf(email);
  return domain !== undefined && domains.some((d) => d.toLowerCase() === domain) ? email : undefined;
}
