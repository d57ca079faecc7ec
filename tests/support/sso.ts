import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { Client, type TestApp } from './app.js';
import { atProvider } from './oidc/provider.js';

// The SPA's side of a single sign-on (docs/sso.md#the-flow), through HTTP:
// a PKCE pair and a state, authorize, the browser at the provider, the
// callback, and the code's redemption.

export const PUBLIC_URL = 'https://dept.example.com';
export const RETURN_TO = 'https://spa.example.com/sso/done';

export const callbackOf = (id: string) => `${PUBLIC_URL}/auth/sso/${id}/callback`;

export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** GET /auth/sso/{id}/authorize as the SPA's browser sends it; `query` overrides or removes (undefined) a parameter. */
export async function authorize(t: TestApp, id: string, query: Record<string, string | undefined> = {}) {
  const { verifier, challenge } = pkce();
  const state = randomBytes(12).toString('base64url');
  const params = { return_to: RETURN_TO, state, code_challenge: challenge, code_challenge_method: 'S256', ...query };
  const search = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
  const res = await t.app.inject({ method: 'GET', url: `/auth/sso/${id}/authorize?${search}` });
  return { res, verifier, state: params.state };
}

/** A sign-in up to the provider sending the browser back (the callback not yet called): what it carries, and the SPA's verifier and state. */
export async function pastProvider(t: TestApp, id: string, action: { account: string } | { deny: true } = { account: 'alice' }) {
  const { res, verifier, state } = await authorize(t, id);
  expect(res.statusCode, res.body).toBe(302);
  const back = await atProvider(String(res.headers.location), callbackOf(id), action);
  return { back, verifier, state };
}

/** The service's callback, called with what the provider sent the browser back with. */
export async function callback(t: TestApp, id: string, query: URLSearchParams | string) {
  return t.app.inject({ method: 'GET', url: `/auth/sso/${id}/callback?${query.toString()}` });
}

/** Where a 303 sent the browser, as a URL; fails the test when the answer was not a 303 to return_to. */
export function handback(res: { statusCode: number; headers: Record<string, unknown>; body: string }): URL {
  expect(res.statusCode, res.body).toBe(303);
  const url = new URL(String(res.headers.location));
  expect(url.origin + url.pathname).toBe(RETURN_TO);
  return url;
}

export async function redeem(t: TestApp, code: string, verifier: string) {
  const res = await t.app.inject({ method: 'POST', url: '/auth/sso/token', payload: { code, code_verifier: verifier } });
  return { status: res.statusCode, body: res.json() };
}

/**
 * A whole sign-in as `account` through connection `id`: answers where the
 * callback sent the browser (code or error) and, with a code, the token.
 * `rewrite` may change the provider's authorization URL before the browser
 * follows it (a test's forgery).
 */
export async function signIn(t: TestApp, id: string, action: { account: string } | { deny: true }, rewrite: (url: URL) => void = () => {}) {
  const { res, verifier, state } = await authorize(t, id);
  expect(res.statusCode, res.body).toBe(302);
  const providerUrl = new URL(String(res.headers.location));
  rewrite(providerUrl);
  const back = await atProvider(providerUrl.href, callbackOf(id), action);
  const landed = handback(await callback(t, id, back.searchParams));
  expect(landed.searchParams.get('state')).toBe(state);
  const code = landed.searchParams.get('code');
  const error = landed.searchParams.get('error');
  const token = code ? await redeem(t, code, verifier) : undefined;
  return { landed, code, error, verifier, token, back };
}

/** A client holding the token of a successful sign-in. */
export function signedIn(t: TestApp, token: { status: number; body: any } | undefined): Client {
  expect(token?.status, JSON.stringify(token?.body)).toBe(200);
  return new Client(t.app, token!.body.data.access_token);
}
