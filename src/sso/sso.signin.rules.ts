import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { assert } from '../core/app.error.js';
import { TENANT_CODE } from '../core/common.schema.js';
import { EMAIL_MAX, NICK_NAME_MAX, USER_NAME_MAX } from '../core/limits.js';
import { tenantProblem } from '../identity/tenant.state.js';
import type { SignInConnection } from './sso.signin.sql.js';

// The rules of a sign-in (docs/sso.md#the-flow, docs/sso.md#who-signs-in),
// one function each: when a sign-in may start, what an ID token must name,
// which email counts, the account a first sign-in creates, and the one-time
// code with its PKCE check. Plain functions: no database, no request. The
// legs in sso.signin.ts and the person's lookup in sso.person.ts are lists of
// these calls; the rules of the connection itself are in sso.rules.ts.

/**
 * Rule (leg 1): a sign-in starts only through an enabled connection of a
 * tenant that is not suspended, back to one of the connection's returnUrls,
 * compared exactly. Every refusal is a 400: nothing is redirected yet.
 */
export function assertSignInMayStart(connection: SignInConnection, id: string, returnTo: string): void {
  assert(connection.status === '0', 400, `SSO connection ${id} is disabled`);
  const problem = tenantProblem(connection);
  assert(!problem, 400, `Sign-in refused: ${problem}`);
  assert(connection.returnUrls.includes(returnTo), 400, `return_to is not one of SSO connection ${id}'s returnUrls (compared exactly)`);
}

/**
 * Rule (leg 2): whom an ID token names: its subject claim (the connection's
 * subjectClaim), a non-empty string, and only when its `tid` is one of the
 * connection's allowedTids (none listed: not checked). Otherwise why not.
 */
export function tokenSubject(connection: SignInConnection, claims: Record<string, unknown>): { subject: string } | { why: string } {
  if (connection.allowedTids.length > 0 && !connection.allowedTids.includes(String(claims.tid)))
    return { why: `tid ${JSON.stringify(claims.tid)} is not one of the connection's allowedTids` };
  const subject = claims[connection.subjectClaim];
  if (typeof subject !== 'string' || subject === '') return { why: `the ID token has no "${connection.subjectClaim}" claim` };
  return { subject };
}

/** The domain of an email address, lower-cased; undefined when it has none. */
function domainOf(email: string): string | undefined {
  const at = email.lastIndexOf('@');
  return at > 0 && at < email.length - 1 ? email.slice(at + 1).toLowerCase() : undefined;
}

/**
 * Rule: the ID token's email, when the provider says it is verified; else
 * undefined. `email_verified` is a boolean in the standard; some providers
 * (AWS Cognito) send the string "true", which counts the same.
 */
function verifiedEmail(claims: Record<string, unknown>): string | undefined {
  const verified = claims.email_verified === true || claims.email_verified === 'true';
  return verified && typeof claims.email === 'string' ? claims.email : undefined;
}

/** Rule: an email links a person only when it is verified (verifiedEmail) and its domain is one the connection vouches for. */
export function emailVouchedFor(claims: Record<string, unknown>, domains: string[]): string | undefined {
  const email = verifiedEmail(claims);
  if (email === undefined) return undefined;
  const domain = domainOf(email);
  return domain !== undefined && domains.some((d) => d.toLowerCase() === domain) ? email : undefined;
}

const clip = (text: unknown, max: number): string | undefined =>
  typeof text === 'string' && text.trim() !== '' ? text.trim().slice(0, max) : undefined;

/**
 * Rule (jit): the account a first sign-in creates for a person no other
 * rule found: userName the email when the provider says it is verified, else
 * the subject; nickName the name the provider gives. None when the userName
 * would hold white space.
 */
export function jitAccount(
  claims: Record<string, unknown>,
  subject: string,
): { userName: string; nickName: string; email: string | null } | undefined {
  const email = clip(verifiedEmail(claims), EMAIL_MAX);
  const userName = (email ?? subject).slice(0, USER_NAME_MAX);
  if (/\s/.test(userName)) return undefined;
  const nickName = clip(claims.name, NICK_NAME_MAX) ?? clip(claims.preferred_username, NICK_NAME_MAX) ?? userName.slice(0, NICK_NAME_MAX);
  return { userName, nickName, email: email ?? null };
}

const CODE_TENANT = new RegExp(`^(${TENANT_CODE})\\.`);

/** Rule: a one-time code starts with its tenant's code and a dot, so its redemption names the tenant (as every statement does); the rest is 32 random bytes. */
export const newCode = (tenantId: string) => `${tenantId}.${randomBytes(32).toString('base64url')}`;

/** The tenant a one-time code names (newCode), or undefined when it is not shaped like one. */
export const tenantOfCode = (code: string): string | undefined => CODE_TENANT.exec(code)?.[1];

/** S256 of a PKCE verifier (RFC 7636 §4.2). */
const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** Rule (leg 3): a code is redeemed only with the verifier of the PKCE challenge it was bound to, compared in constant time. */
export function assertVerifierMatches(challenge: string, verifier: string): void {
  const expected = Buffer.from(challenge);
  const actual = Buffer.from(challengeOf(verifier));
  assert(
    expected.length === actual.length && timingSafeEqual(expected, actual),
    400,
    'code_verifier does not match the code_challenge of this sign-in; sign in again',
  );
}
