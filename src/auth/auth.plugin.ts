import fp from 'fastify-plugin';
import fastifyJwt from '@fastify/jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../core/app.error.js';
import { today } from '../core/time.js';
import { accountProblem, findSession } from './auth.sql.js';
import { tenantProblem } from '../identity/tenant.state.js';
import { apiKeyProblem, findApiKey, touchApiKey, usedBeforeThisMinute, type FoundApiKey } from '../apikeys/apikey.sql.js';
import { apiKeyTenant, hashApiKey, looksLikeApiKey } from '../apikeys/apikey.token.js';
import { PERMISSIONS, type Permission } from '../identity/roles.js';
import type { Caller } from '../identity/caller.js';
import type { CacheCounts } from '../core/cache.counts.js';
import { createSessionCache, type SessionCache } from './session.cache.js';
import { retryRead } from '../db/retry.js';

export interface TokenClaims {
  /** tenant code */
  tid: string;
  /** session id (auth_session) */
  sid: string;
  sub: string;
  /** expiry, seconds since the epoch (set by sign's expiresIn) */
  exp?: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Reachable without a token (login, health, docs). */
    public?: boolean;
    /** The RuoYi permission string the route requires. */
    permission?: Permission;
    /**
     * A successful answer of this route may change who is allowed in (a
     * logout, a user, a tenant, an API key): this node's session cache is
     * cleared before the answer leaves, so the client's next request already
     * reads the new state.
     */
    changesAccess?: boolean;
  }
  interface FastifyRequest {
    caller: Caller;
  }
  interface FastifyInstance {
    /** Clear it after a write that may change who is allowed in, when the write is not a route declaring `changesAccess`. */
    sessionCache: SessionCache<unknown>;
  }
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenClaims;
    user: TokenClaims;
  }
}

const BEARER = /^Bearer [A-Za-z0-9._~+/-]+=*$/i;

type FoundSession = NonNullable<Awaited<ReturnType<typeof findSession>>>;
/**
 * What the session cache keeps per token: for a login's token its verified
 * claims, until when they hold, and the session found; for an API key the key
 * found (docs/security.md#api-keys).
 */
type CachedSession = { claims: TokenClaims; expires: number; session: FoundSession; key?: never } | { key: FoundApiKey; expires: number };

/**
 * Authentication and permission for every route not marked `public`:
 * the JWT is verified, then its session, user and tenant are read from the
 * database (through a cache of a few seconds, session.cache.ts), so logout,
 * password change, disabling and deletion take effect at once on this node
 * and within seconds on every node sharing the database; expiry is checked
 * against today's date on every request.
 */
interface AuthOptions {
  secret: string;
  tokenTtl: number;
  sessionCacheMs?: number;
  /** Hits and misses of the session cache, for the metrics. */
  sessionCacheCounts?: CacheCounts;
}

export const authPlugin = fp(
  async (app: FastifyInstance, opts: AuthOptions) => {
    await app.register(fastifyJwt, { secret: opts.secret, sign: { expiresIn: opts.tokenTtl } });
    app.decorateRequest('caller', null as unknown as Caller);
    const sessions = createSessionCache<CachedSession>(opts.sessionCacheMs);
    const counts = opts.sessionCacheCounts;
    app.decorate('sessionCache', sessions as SessionCache<unknown>);
    // onSend runs before the response leaves, so the client's next request already misses the cache.
    // A callback hook, not an async one: it runs on every response and needs no promise.
    app.addHook('onSend', (request, reply, payload, done) => {
      if (request.routeOptions.config?.changesAccess && reply.statusCode < 400) sessions.clear();
      done(null, payload);
    });

    /** The bearer token of the request; AppError 401 when there is none. */
    function bearerToken(request: FastifyRequest): string {
      const header = request.headers.authorization;
      if (header === undefined) throw new AppError(401, 'Missing Authorization header; send "Bearer <access_token>" or "Bearer <API key>"');
      if (!BEARER.test(header)) throw new AppError(401, 'Malformed Authorization header; expected "Bearer <access_token>" or "Bearer <API key>"');
      return header.slice('Bearer '.length);
    }

    /** The token's claims once its signature and expiry are verified; AppError 401 otherwise. */
    function verifiedClaims(token: string): TokenClaims {
      let claims: TokenClaims;
      try {
        claims = app.jwt.verify<TokenClaims>(token);
      } catch (err) {
        const expired = (err as { code?: string }).code === 'FAST_JWT_EXPIRED';
        throw new AppError(401, expired ? 'Access token has expired; log in again' : 'Access token is invalid');
      }
      if (typeof claims.tid !== 'string' || typeof claims.sid !== 'string') throw new AppError(401, 'Access token is invalid');
      return claims;
    }

    /** Admits the caller behind a found (or missing) session and checks the route's permission; the refusal otherwise. */
    function admit(request: FastifyRequest, claims: TokenClaims, session: FoundSession | undefined): AppError | undefined {
      if (!session) return new AppError(401, 'Access token has been revoked or has expired; log in again');
      const problem = accountProblem(session);
      if (problem) return new AppError(401, `Access token refused: ${problem}`);
      if (session.revoked) return new AppError(401, 'Access token has been revoked or has expired; log in again');
      request.caller = {
        tenantId: session.tenantId,
        userId: session.userId,
        userName: session.userName,
        role: session.role,
        sessionId: claims.sid,
      };
      return permitted(request);
    }

    /** Admits the program behind a found (or unknown) API key, like admit does a token's user. */
    function admitKey(request: FastifyRequest, key: FoundApiKey | undefined): AppError | undefined {
      if (!key) return new AppError(401, 'API key is invalid or has been revoked');
      const problem = tenantProblem(key) ?? apiKeyProblem(key);
      if (problem) return new AppError(401, `API key refused: ${problem}`);
      request.caller = { tenantId: key.tenantId, userId: 0, userName: `apikey:${key.name}`, role: key.role, sessionId: '', apiKeyId: key.id };
      return permitted(request);
    }

    /** The route's permission, checked against the admitted caller's role. */
    function permitted(request: FastifyRequest): AppError | undefined {
      const needed = request.routeOptions.config?.permission;
      const { role } = request.caller;
      if (needed && !PERMISSIONS[role].includes(needed)) return new AppError(403, `Your role "${role}" lacks the permission ${needed}`);
      return undefined;
    }

    /** An API key's request: the key is looked up by its hash in the tenant it names, through the same cache. */
    function authenticateKey(request: FastifyRequest, token: string, key: string, done: (err?: Error) => void): void {
      const tenantId = apiKeyTenant(token);
      if (tenantId === undefined) return done(new AppError(401, 'API key is invalid or has been revoked'));
      sessions
        .get(key, async () => {
          const found = await retryRead(() => findApiKey(request.sql, tenantId, hashApiKey(token)));
          return found && { key: found, expires: Infinity };
        })
        .then(
          async (cached) => {
            const refused = admitKey(request, cached?.key);
            if (!refused && cached?.key && usedBeforeThisMinute(cached.key)) {
              // Honoured in a new minute: lastUsedTime follows (the cached copy too, so the next requests do not write again).
              // A failed write costs the request nothing: the minute is written by a later one.
              cached.key.lastUsedTime = new Date();
              await touchApiKey(request.sql, tenantId, cached.key.id).catch((err: unknown) =>
                request.log.warn({ err }, 'API key lastUsedTime not written'),
              );
            }
            done(refused);
          },
          (err: Error) => done(err),
        );
    }

    // A callback hook run on every request. The cache is keyed by the token itself, so a token seen in the last
    // seconds costs one lookup: no signature check (its expiry is still checked), no promise, no database read.
    // findSession judges the service periods against today: a new day is a new key, so expiry is never cached across midnight.
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.is404 || request.routeOptions.config?.public) return done();
      let token: string;
      try {
        token = bearerToken(request);
      } catch (err) {
        return done(err as AppError);
      }
      const key = `${today()}:${token}`;
      const cached = sessions.peek(key);
      if (cached !== undefined && cached.expires > Date.now()) {
        if (counts) counts.hits++;
        return done(cached.key ? admitKey(request, cached.key) : admit(request, cached.claims, cached.session));
      }
      if (counts) counts.misses++;
      if (looksLikeApiKey(token)) return authenticateKey(request, token, key, done);
      let claims: TokenClaims;
      try {
        claims = verifiedClaims(token);
      } catch (err) {
        return done(err as AppError);
      }
      sessions
        .get(key, async () => {
          // A read: run once more if its connection was lost (src/db/retry.ts).
          const session = await retryRead(() => findSession(request.sql, claims.tid, claims.sid));
          return session && { claims, session, expires: (claims.exp ?? 0) * 1000 };
        })
        .then(
          (cached) => done(admit(request, claims, cached?.key ? undefined : cached?.session)),
          (err: Error) => done(err),
        );
    });
  },
  { name: 'auth' },
);
