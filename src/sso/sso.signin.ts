import * as oidc from 'openid-client';
import type { Sql } from '../db/database.js';
import { transaction } from '../db/retry.js';
import { AppError, assert } from '../core/app.error.js';
import { recordAudit } from '../audit/audit.record.js';
import type { Actor, RequestOrigin } from '../identity/caller.js';
import { tenantProblem } from '../identity/tenant.state.js';
import { accountProblem, createSession, lockLoginAccount } from '../auth/auth.sql.js';
import { InvalidProviderResponse, type ProviderClients } from './sso.client.js';
import { resolvePerson } from './sso.person.js';
import { parseConnectionId, type ConnectionKey } from './sso.rules.js';
import { assertSignInMayStart, assertVerifierMatches, newCode, tenantOfCode, tokenSubject } from './sso.signin.rules.js';
import {
  link,
  lockConnectionEnabled,
  saveAttempt,
  saveCode,
  signInConnection,
  takeAttempt,
  takeCode,
  type SignInConnection,
} from './sso.signin.sql.js';

// A sign-in through a connection, in three legs (docs/sso.md#the-flow):
// authorize (the SPA's browser to the provider), callback (the provider
// back to the service, which answers the SPA's return URL with a one-time
// code or a refusal) and token (the SPA redeems the code with its PKCE
// verifier for exactly what a password login answers).

/** Why a sign-in was refused, as the SPA's return URL is told (`error=`). */
type Refusal = 'access_denied' | 'not_provisioned' | 'user_disabled' | 'tenant_suspended' | 'invalid_response';

async function connectionOf(sql: Sql, id: string): Promise<{ key: ConnectionKey; connection: SignInConnection }> {
  const key = parseConnectionId(id);
  const connection = key && (await signInConnection(sql, key));
  assert(key && connection, 404, `SSO connection ${id} not found`);
  return { key, connection };
}

/**
 * Leg 1: checks what the SPA sent and the connection, keeps the sign-in in
 * flight (the provider leg's own PKCE verifier, state and nonce beside the
 * SPA's return URL, state and challenge) and answers the provider's
 * authorization URL. Every refusal is a 400 here: nothing is redirected.
 */
export async function startSignIn(
  sql: Sql,
  clients: ProviderClients,
  id: string,
  input: { returnTo: string; state: string; codeChallenge: string },
  redirectUri: string,
  log: (message: string) => void,
): Promise<string> {
  const { key, connection } = await connectionOf(sql, id);
  assertSignInMayStart(connection, id, input.returnTo);
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  let url: string;
  try {
    url = await clients.authorizationUrl(connection, { redirectUri, scope: connection.scopes, state, nonce, codeVerifier });
  } catch (err) {
    // What the provider (or the network) said is for the operator's log: on this public route it would tell
    // anyone the inside of the provider's answer or of the service's network.
    log(`SSO connection ${id}: the provider's discovery document could not be read: ${(err as Error).message}`);
    throw new AppError(503, `The identity provider of SSO connection ${id} could not be reached; try again later`);
  }
  await saveAttempt(sql, key, state, {
    codeVerifier,
    nonce,
    redirectUri,
    returnTo: input.returnTo,
    spaState: input.state,
    spaChallenge: input.codeChallenge,
  });
  return url;
}

/** Where the callback sends the browser: the SPA's return URL with the code or the refusal, and the SPA's own state. */
export interface Handback {
  returnTo: string;
  params: { code: string } | { error: Refusal };
  state: string;
}

/**
 * Leg 2: takes the sign-in its state names (once), redeems the provider's
 * code, checks the ID token, finds the person within the connection's tenant
 * (sso.person.ts) and hands the SPA a one-time code bound to its PKCE
 * challenge. A state that is unknown, expired or used is a 400; every other
 * refusal goes back to the SPA as `error=<reason>`, recorded in the trail.
 */
export async function finishSignIn(
  sql: Sql,
  clients: ProviderClients,
  id: string,
  query: Record<string, string | undefined>,
  origin: RequestOrigin,
  log: (message: string) => void,
): Promise<Handback> {
  const key = parseConnectionId(id);
  assert(key, 404, `SSO connection ${id} not found`);
  assert(query.state, 400, 'The sign-in has no state; start it again from the login page');
  const attempt = await takeAttempt(sql, key, query.state);
  assert(attempt, 400, 'Unknown, expired or already used sign-in state; start it again from the login page');
  const connection = await signInConnection(sql, key);
  assert(connection, 404, `SSO connection ${id} not found`);
  const back = (params: Handback['params']): Handback => ({ returnTo: attempt.returnTo, params, state: attempt.spaState });
  const refuse = async (reason: Refusal, why: string, userName = ''): Promise<Handback> => {
    log(`SSO sign-in through ${id} refused (${reason}): ${why}`);
    const actor: Actor = { tenantId: key.tenantId, userName, ...origin };
    await recordAudit(sql, actor, [
      { action: 'auth.login_failed', entityType: 'session', entityId: '', changes: { via: 'sso', reason, connectionId: id } },
    ]);
    return back({ error: reason });
  };
  // Disabled since the authorize leg: the sign-in in flight ends here, before the provider's code is redeemed.
  if (connection.status !== '0') return refuse('access_denied', `SSO connection ${id} was disabled after the sign-in began`);

  // The URL the provider was given: the code's redemption sends it again, and openid-client takes it from here.
  const callbackUrl = new URL(attempt.redirectUri);
  for (const [name, value] of Object.entries(query)) if (value !== undefined) callbackUrl.searchParams.set(name, value);
  let claims: Record<string, unknown>;
  try {
    claims = await clients.redeem(connection, callbackUrl, { state: query.state, nonce: attempt.nonce, codeVerifier: attempt.codeVerifier });
  } catch (err) {
    if (err instanceof oidc.AuthorizationResponseError) return refuse('access_denied', `the provider answered ${err.error}`);
    if (err instanceof InvalidProviderResponse) return refuse('invalid_response', err.message);
    return refuse('invalid_response', `the provider could not be reached: ${(err as Error).message}`);
  }
  const token = tokenSubject(connection, claims);
  if ('why' in token) return refuse('invalid_response', token.why);
  const { subject } = token;
  const named = typeof claims.email === 'string' ? claims.email : subject;
  const problem = tenantProblem(connection);
  if (problem) return refuse('tenant_suspended', problem, named);

  type Outcome = { code: string } | { refusal: 'not_provisioned' | 'user_disabled'; userName?: string };
  const outcome = await transaction(sql, async (tx): Promise<Outcome> => {
    const actor: Actor = { tenantId: key.tenantId, userName: `sso:${connection.name}`, ...origin };
    const found = await resolvePerson(tx, actor, key, connection, claims, subject);
    if (!found) return { refusal: 'not_provisioned' };
    if (found.person.status !== '0') return { refusal: 'user_disabled', userName: found.person.userName };
    if (found.how !== 'link' && (await link(tx, key, subject, found.person.userId))) {
      const changes = { connectionId: id, subject, by: found.how };
      await recordAudit(tx, { ...actor, userName: found.person.userName }, [
        { action: 'sso.link', entityType: 'user', entityId: found.person.userId, changes },
      ]);
    }
    const code = newCode(key.tenantId);
    await saveCode(tx, key, code, found.person.userId, attempt.spaChallenge);
    return { code };
  });
  if ('refusal' in outcome)
    return refuse(outcome.refusal, `no person of tenant ${key.tenantId} for ${connection.subjectClaim} ${subject}`, outcome.userName ?? named);
  return back({ code: outcome.code });
}

/**
 * Leg 3: the one-time code for a session, once, within its 60 s, for the SPA
 * holding the verifier of the challenge it was bound to. The person and the
 * tenant are checked again, as at a password login; the session is an
 * ordinary one (logout, revocation and suspension end it as any other).
 * So is the connection: disabled or deleted since the callback, no session.
 */
export async function redeemCode(sql: Sql, code: string, verifier: string, ttlSeconds: number, origin: RequestOrigin) {
  const tenantId = tenantOfCode(code);
  const taken = tenantId ? await takeCode(sql, tenantId, code) : undefined;
  assert(tenantId && taken, 400, 'Unknown, expired or already used code; sign in again');
  assertVerifierMatches(taken.spaChallenge, verifier);
  return transaction(sql, async (tx) => {
    // The connection too, as the person and the tenant: one disabled or deleted since the callback signs nobody in.
    if (!(await lockConnectionEnabled(tx, { tenantId, connectionId: taken.connectionId })))
      throw new AppError(403, `Login refused: SSO connection ${tenantId}-${taken.connectionId} has been disabled or deleted`);
    const current = await lockLoginAccount(tx, tenantId, taken.userId);
    const problem = current ? accountProblem(current) : 'the user has been deleted';
    if (problem || !current) throw new AppError(403, `Login refused: ${problem}`);
    const sessionId = await createSession(tx, tenantId, taken.userId, ttlSeconds);
    const actor = { tenantId, userName: current.userName, ...origin };
    const changes = { userId: taken.userId, connectionId: `${tenantId}-${taken.connectionId}` };
    await recordAudit(tx, actor, [{ action: 'auth.sso', entityType: 'session', entityId: sessionId, changes }]);
    return { tenantId, userId: taken.userId, sessionId };
  });
}
