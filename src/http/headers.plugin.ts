import fp from 'fastify-plugin';
import cors from '@fastify/cors';
import type { FastifyContextConfig, FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Cache-Control of the route's 200 and 304 answers; every other response is `no-store`. */
    cacheControl?: string;
    /** Content-Security-Policy of the route (the docs page), as directive name → sources. */
    contentSecurityPolicy?: Record<string, string[]>;
  }
}

/** Department list and tree: clients may keep them but must revalidate (docs/api-rules.md#response-headers, #concurrency-control). */
export const REVALIDATE = 'private, no-cache';

/** `name a b;name2 c`: the header form of a policy. */
function cspHeader(directives: Record<string, string[]>): string {
  return Object.entries(directives)
    .map(([name, sources]) => [name, ...sources].join(' '))
    .join(';');
}

/**
 * The security headers every API answer carries (docs/api-rules.md#response-headers): the set that
 * means something on a JSON answer (OWASP's REST guidance): nosniff, frames
 * denied twice over (X-Frame-Options and the CSP's frame-ancestors), no
 * referrer, a CSP that allows nothing (an answer opened in a browser runs
 * nothing), and HSTS for a TLS terminator that passes it on. They never vary
 * with the request, so they are written out once rather than computed by
 * helmet's middleware chain on every request (docs/benchmark.md).
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': cspHeader({ 'default-src': ["'none'"], 'frame-ancestors': ["'none'"] }),
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

/**
 * What a page adds (the `/docs` page, the one route with its own CSP): the
 * rest of helmet's default set, which governs documents a browser renders
 * (opener isolation, cross-origin embedding, prefetching, legacy IE and
 * Flash switches) and does nothing on a JSON answer. API answers go without
 * them: every header is parsed by every client on every answer, and these
 * seven would be most of the header bytes of a small answer.
 */
const DOCUMENT_HEADERS: Readonly<Record<string, string>> = {
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};

/**
 * Response headers of docs/api-rules.md#response-headers, in one place: the security set above
 * (a route may bring its own CSP), Cache-Control, and CORS for the origins
 * in CORS_ORIGINS (none when unset: no CORS header at all).
 */
export const headersPlugin = fp(
  async (app: FastifyInstance, opts: { corsOrigins?: string[] | undefined }) => {
    // A route's own set (the docs page's CSP) is built at its first request and kept with its config.
    const routeHeaders = new WeakMap<object, Readonly<Record<string, string>>>();
    const headersOf = (config: FastifyContextConfig | undefined) => {
      if (!config?.contentSecurityPolicy) return SECURITY_HEADERS;
      let headers = routeHeaders.get(config);
      if (!headers) {
        headers = { ...SECURITY_HEADERS, ...DOCUMENT_HEADERS, 'content-security-policy': cspHeader(config.contentSecurityPolicy) };
        routeHeaders.set(config, headers);
      }
      return headers;
    };

    // Set on arrival, so refusals from any later hook carry them too. Callback hooks: they run on every request.
    app.addHook('onRequest', (request, reply, done) => {
      reply.headers(headersOf(request.routeOptions.config));
      done();
    });

    app.addHook('onSend', (request, reply, payload, done) => {
      const wanted = request.routeOptions.config?.cacheControl;
      const status = reply.statusCode;
      reply.header('cache-control', wanted && (status === 200 || status === 304) ? wanted : 'no-store');
      done(null, payload);
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
