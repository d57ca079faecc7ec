import * as oidc from 'openid-client';
import { createRemoteJWKSet, customFetch as joseFetch, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { AddressRule } from '../outbound/outbound.address.js';
import { guardedFetch } from '../outbound/outbound.fetch.js';

// The relying party's side of OpenID Connect (docs/sso.md#the-flow), through
// openid-client (a certified RP library): discovery, the authorization URL
// with PKCE S256, state and nonce, and the code's redemption with the ID
// token's claims checked (iss, aud, exp with 60 s of skew, nonce, state, the
// authorization response's iss). openid-client checks the ID token's
// signature only on request; it is checked here with jose against the
// provider's JWKS, one key set per issuer shared by every connection naming
// it, fetched again once when a token names a key id it does not hold (a
// provider rotating its keys). Every outbound call (discovery, JWKS, token)
// goes through the outbound address rule, bounded in time.

/** At most this long for any one call to a provider. */
const CALL_TIMEOUT_MS = 5_000;
/** Tolerance for the ID token's times (exp, iat, nbf). */
const CLOCK_SKEW_S = 60;
/** A provider's discovery document is used this long before it is read again. */
const DISCOVERY_TTL_MS = 60 * 60 * 1000;
/** After a key set was fetched, an unknown key id waits this long before fetching again (a bound on refetches, not on rotation). */
const JWKS_COOLDOWN_MS = 1_000;

export interface ProviderConnection {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** Why a provider's answer was not accepted; its message is for the log, never for the client. */
export class InvalidProviderResponse extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InvalidProviderResponse';
  }
}

export class ProviderClients {
  private readonly configurations = new Map<string, { at: number; config: Promise<oidc.Configuration> }>();
  private readonly keySets = new Map<string, JWTVerifyGetKey>();
  private readonly fetch: ReturnType<typeof guardedFetch>;

  constructor(private readonly rule: AddressRule) {
    this.fetch = guardedFetch(rule, CALL_TIMEOUT_MS);
  }

  /** The connection's configuration, from the provider's discovery document (kept an hour; a failed read is not kept). */
  configuration(c: ProviderConnection): Promise<oidc.Configuration> {
    const key = JSON.stringify([c.issuer, c.clientId, c.clientSecret]);
    const cached = this.configurations.get(key);
    if (cached && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.config;
    const config = oidc
      .discovery(
        new URL(c.issuer),
        c.clientId,
        { client_secret: c.clientSecret, [oidc.clockTolerance]: CLOCK_SKEW_S },
        // client_secret_basic: the method OpenID Connect assumes when a client names none; every provider takes it.
        oidc.ClientSecretBasic(c.clientSecret),
        {
          [oidc.customFetch]: this.fetch,
          // http:// reaches only addresses in OUTBOUND_ALLOWED_CIDRS: the address rule refuses the rest.
          execute: new URL(c.issuer).protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
          timeout: CALL_TIMEOUT_MS / 1000,
        },
      )
      .catch((err: unknown) => {
        this.configurations.delete(key);
        throw err;
      });
    this.configurations.set(key, { at: Date.now(), config });
    return config;
  }

  /** The provider's authorization URL for one sign-in. */
  async authorizationUrl(
    c: ProviderConnection,
    params: { redirectUri: string; scope: string; state: string; nonce: string; codeVerifier: string },
  ): Promise<string> {
    const config = await this.configuration(c);
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: params.redirectUri,
      scope: params.scope,
      state: params.state,
      nonce: params.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(params.codeVerifier),
      code_challenge_method: 'S256',
    });
    return url.href;
  }

  /**
   * Redeems the callback's code and answers the ID token's claims, every
   * check passed (openid-client's, then the signature and iat here). The
   * provider's own refusal (`error=access_denied`) is thrown as
   * oidc.AuthorizationResponseError; anything else wrong as InvalidProviderResponse.
   */
  async redeem(
    c: ProviderConnection,
    callbackUrl: URL,
    checks: { state: string; nonce: string; codeVerifier: string },
  ): Promise<Record<string, unknown>> {
    const config = await this.configuration(c);
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        pkceCodeVerifier: checks.codeVerifier,
        idTokenExpected: true,
      });
    } catch (err) {
      if (err instanceof oidc.AuthorizationResponseError) throw err;
      throw new InvalidProviderResponse(`the code was not redeemed: ${describe(err)}`, { cause: err });
    }
    if (!tokens.id_token) throw new InvalidProviderResponse('no ID token');
    const jwksUri = config.serverMetadata().jwks_uri;
    if (!jwksUri) throw new InvalidProviderResponse('the provider publishes no jwks_uri');
    return this.verifyIdToken(c, tokens.id_token, jwksUri);
  }

  /**
   * The ID token's signature through the issuer's key set, its iss and aud
   * compared exactly with the connection's issuer and client id, exp, nbf
   * and iat within the skew; answers its claims. openid-client compares iss
   * with the discovery document's issuer, which it matched to the
   * connection's only as URLs (a trailing slash apart): here it is the
   * connection's own text.
   */
  async verifyIdToken(c: ProviderConnection, idToken: string, jwksUri: string): Promise<Record<string, unknown>> {
    try {
      const { payload } = await jwtVerify(idToken, this.keySet(c.issuer, jwksUri), {
        issuer: c.issuer,
        audience: c.clientId,
        clockTolerance: CLOCK_SKEW_S,
      });
      // jose checks exp and nbf; a token issued in the future is refused too.
      if (typeof payload.iat !== 'number' || payload.iat > Date.now() / 1000 + CLOCK_SKEW_S) throw new Error('"iat" is in the future');
      return payload as Record<string, unknown>;
    } catch (err) {
      throw new InvalidProviderResponse(`the ID token's signature, issuer, audience or times were refused: ${describe(err)}`, { cause: err });
    }
  }

  /** The issuer's key set, shared by every connection naming the issuer. */
  private keySet(issuer: string, jwksUri: string): JWTVerifyGetKey {
    const key = `${issuer} ${jwksUri}`;
    let set = this.keySets.get(key);
    if (!set) {
      set = createRemoteJWKSet(new URL(jwksUri), {
        timeoutDuration: CALL_TIMEOUT_MS,
        cooldownDuration: JWKS_COOLDOWN_MS,
        // jose hands its headers as a Headers object; the guarded fetch takes a plain record.
        [joseFetch]: (url: string, init: { method: string; headers: Headers; redirect: 'manual'; signal: AbortSignal }) =>
          this.fetch(url, { ...init, headers: Object.fromEntries(init.headers) }),
      });
      this.keySets.set(key, set);
    }
    return set;
  }
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { message?: string } };
  const cause = e.cause?.message ? ` (${e.cause.message})` : '';
  return `${e.code ? `${e.code}: ` : ''}${e.message ?? String(err)}${cause}`;
}
