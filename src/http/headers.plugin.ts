import fp from 'fastify-plugin';
import cors from '@fastify/cors';
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Cache-Control of the route's 200 and 304 answers; every other response is `no-store`. */
    cacheControl?: string;
    /** @fastify/helmet options of this route (the docs page's content security policy). */
    helmet?: Omit<FastifyHelmetOptions, 'global'>;
  }
}

/** Department list and tree: clients may keep them but must revalidate (DECISIONS §1, §11). */
export const REVALIDATE = 'private, no-cache';

/**
 * Response headers of DECISIONS §1, in one place: helmet's set (nosniff,
 * frame DENY, no-referrer, and a CSP that allows nothing, since API answers
 * are JSON and never rendered), Cache-Control, and CORS for the origins in
 * CORS_ORIGINS (none when unset: no CORS header at all).
 */
export const headersPlugin = fp(
  async (app: FastifyInstance, opts: { corsOrigins?: string[] | undefined }) => {
    await app.register(helmet, {
      contentSecurityPolicy: { useDefaults: false, directives: { 'default-src': ["'none'"], 'frame-ancestors': ["'none'"] } },
      frameguard: { action: 'deny' },
      referrerPolicy: { policy: 'no-referrer' },
    });

    app.addHook('onSend', async (request, reply, payload) => {
      const wanted = request.routeOptions.config?.cacheControl;
      const status = reply.statusCode;
      reply.header('cache-control', wanted && (status === 200 || status === 304) ? wanted : 'no-store');
      return payload;
    });

    if (opts.corsOrigins) {
      await app.register(cors, {
        origin: opts.corsOrigins.includes('*') ? '*' : opts.corsOrigins,
        methods: ['GET', 'POST', 'PUT', 'DELETE'],
        // Bearer tokens, never cookies: credentials are not needed.
        credentials: false,
        exposedHeaders: ['Location', 'X-Request-Id', 'ETag'],
        maxAge: 600,
      });
    }
  },
  { name: 'headers' },
);
