import type { Id } from '../core/ids.js';
import { AppError, assert } from '../core/app.error.js';
import { TENANT_CODE } from '../core/common.schema.js';
import type { Db } from '../db/database.js';
import type { Caller } from '../identity/caller.js';
import { tenantsReadableBy } from '../identity/scope.js';
import type { AddressRule } from '../outbound/outbound.address.js';
import { assertOutboundUrl } from '../outbound/outbound.url.js';

// The rules of a connection (docs/sso.md#connections), one function each,
// with the SQL that checks it where it needs one: its id and redirect URI,
// its URLs, the tenant it belongs to and the department of the people it
// creates. The writes in sso.sql.ts are lists of these calls; the rules of a
// sign-in through it are in sso.signin.rules.ts.

/** A connection's `id` as the API and the redirect URI carry it: `<tenantId>-<n>`. */
export interface ConnectionKey {
  tenantId: string;
  connectionId: number;
}

const CONNECTION_ID = new RegExp(`^(${TENANT_CODE})-([1-9][0-9]{0,15})$`);

/** The tenant and number of a connection id, or undefined when it is not one (then: 404). */
export function parseConnectionId(id: string): ConnectionKey | undefined {
  const match = CONNECTION_ID.exec(id);
  return match ? { tenantId: match[1]!, connectionId: Number(match[2]) } : undefined;
}

/** The redirect URI of a connection, under the service's public base: what is registered at the provider and what its callback is. */
export const redirectUriOf = (base: string, id: string) => `${base}/auth/sso/${id}/callback`;

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
function assertReturnUrls(urls: string[]): void {
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

/**
 * Rule (on save): the issuer is a URL this service calls (the outbound URL
 * rule), without a query: discovery appends /.well-known/openid-configuration;
 * and the return URLs are as assertReturnUrls says.
 */
export function assertConnectionUrls(rule: AddressRule, input: { issuer: string; returnUrls: string[] }): void {
  assertOutboundUrl(rule, input.issuer, 'issuer', { query: false });
  assertReturnUrls(input.returnUrls);
}

/** Rule: a tenant the caller may manage connections of: live, and in its subtree (the superadmin: any). 404 otherwise. */
export async function assertManagedTenant(db: Db, caller: Caller, tenantId: string): Promise<void> {
  const [row] = await db`SELECT 1 FROM sys_tenant t WHERE t.tenant_id = ${tenantId} AND t.del_flag = '0' AND ${tenantsReadableBy(db, caller, 't')}`;
  assert(row, 404, `Tenant ${tenantId} not found`);
}

/** Rule: people created on first sign-in go to a live department of the connection's tenant. */
export async function assertJitDept(db: Db, tenantId: string, deptId: Id | null | undefined): Promise<void> {
  if (deptId === null || deptId === undefined) return;
  const [row] = await db`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${deptId} AND del_flag = '0'`;
  assert(row, 400, `jitDeptId ${deptId} is not a live department of tenant ${tenantId}`);
}
