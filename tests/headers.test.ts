import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../src/app.js';
import { buildTestApp, type TestApp } from './support/app.js';

// docs/api-rules.md#requests-and-answers: security headers and Cache-Control on every API response,
// `private, no-cache` on the department list and tree, a CSP the docs page
// works under, and CORS only for the origins in CORS_ORIGINS.

let t: TestApp;
let withCors: FastifyInstance;
beforeAll(async () => {
  t = await buildTestApp();
  withCors = await buildApp({
    sql: t.appSql,
    config: { jwtSecret: undefined, tokenTtl: 600, logLevel: 'silent', corsOrigins: ['https://admin.example.com', 'http://localhost:5173'] },
    logger: false,
  });
  await withCors.ready();
});
afterAll(async () => {
  await withCors?.close();
  await t?.close();
});

const auth = () => ({ authorization: `Bearer ${t.root.token}` });
const inject = (options: InjectOptions, app = t.app) => app.inject(options);

function expectSecurityHeaders(headers: Record<string, unknown>) {
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['x-frame-options']).toBe('DENY');
  expect(headers['referrer-policy']).toBe('no-referrer');
}

describe('security headers', () => {
  // Options are built when the test runs, after beforeAll has signed in.
  it.each([
    ['a success', () => ({ method: 'GET', url: '/system/dept-api/100', headers: auth() }), 200],
    ['a write', () => ({ method: 'POST', url: '/system/dept-api', headers: auth(), payload: { parentId: 100, deptName: 'Headers' } }), 200],
    ['a refusal', () => ({ method: 'GET', url: '/auth/me' }), 401],
    ['a validation error', () => ({ method: 'POST', url: '/system/dept-api', headers: auth(), payload: { parentId: 'x' } }), 400],
    ['an unknown route', () => ({ method: 'GET', url: '/nope' }), 404],
    [
      'a failed login',
      () => ({ method: 'POST', url: '/auth/login', payload: { tenantId: '000000', username: 'admin', password: 'wrong-password' } }),
      401,
    ],
    ['a health probe', () => ({ method: 'GET', url: '/healthz' }), 200],
    ['the OpenAPI document', () => ({ method: 'GET', url: '/openapi.json' }), 200],
  ] as const)('%s carries nosniff, DENY, no-referrer, no-store and a CSP that allows nothing', async (_name, options, status) => {
    const res = await inject(options() as InjectOptions);
    expect(res.statusCode).toBe(status);
    expectSecurityHeaders(res.headers);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
  });

  it.each(['/system/dept-api/list', '/system/dept-api/tree', '/system/dept-api/list/', '/system/dept-api/list?status=0'])(
    '%s may be kept but must be revalidated: private, no-cache',
    async (url) => {
      const res = await inject({ method: 'GET', url, headers: auth() });
      expect(res.statusCode).toBe(200);
      expectSecurityHeaders(res.headers);
      expect(res.headers['cache-control']).toBe('private, no-cache');
    },
  );

  it('a refused list or tree is still no-store', async () => {
    for (const url of ['/system/dept-api/list', '/system/dept-api/tree']) {
      const res = await inject({ method: 'GET', url });
      expect(res.statusCode).toBe(401);
      expect(res.headers['cache-control']).toBe('no-store');
    }
    const invalid = await inject({ method: 'GET', url: '/system/dept-api/list?status=7', headers: auth() });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.headers['cache-control']).toBe('no-store');
  });

  it('an API answer carries only the headers that govern data, a page the whole hardening set', async () => {
    // Browser-document headers (opener isolation, embedding, legacy IE and Flash switches) belong to pages only.
    const documentOnly = [
      'cross-origin-opener-policy',
      'cross-origin-resource-policy',
      'origin-agent-cluster',
      'x-dns-prefetch-control',
      'x-download-options',
      'x-permitted-cross-domain-policies',
      'x-xss-protection',
    ];
    const answer = await inject({ method: 'GET', url: '/system/dept-api/100', headers: auth() });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    for (const name of documentOnly) expect(answer.headers[name], name).toBeUndefined();
    const page = await inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    expect(page.headers['cross-origin-opener-policy']).toBe('same-origin');
    expect(page.headers['cross-origin-resource-policy']).toBe('same-origin');
    for (const name of documentOnly) expect(page.headers[name], name).toBeDefined();
  });

  it('the docs page has its own CSP: same-origin scripts, styles, images and fetches, no framing', async () => {
    for (const url of ['/docs', '/docs/', '/docs/static/swagger-ui-bundle.js']) {
      const res = await inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expectSecurityHeaders(res.headers);
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/script-src[^;]*unsafe/);
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("object-src 'none'");
    }
  });
});

describe('CORS', () => {
  const preflight = (origin: string, app: FastifyInstance) =>
    inject(
      {
        method: 'OPTIONS',
        url: '/system/dept-api',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
      },
      app,
    );

  it('is off when CORS_ORIGINS is unset: no CORS header on any answer, preflights included', async () => {
    const simple = await inject({ method: 'GET', url: '/system/dept-api/list', headers: { ...auth(), origin: 'https://admin.example.com' } });
    expect(simple.statusCode).toBe(200);
    const pre = await preflight('https://admin.example.com', t.app);
    for (const res of [simple, pre]) {
      expect(Object.keys(res.headers).filter((name) => name.startsWith('access-control-'))).toEqual([]);
    }
    expect(pre.statusCode).toBe(404);
  });

  it('answers a preflight from an allowed origin without a token', async () => {
    const res = await preflight('https://admin.example.com', withCors);
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('https://admin.example.com');
    expect(String(res.headers['access-control-allow-methods'])).toContain('POST');
    expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain('authorization');
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('gives a disallowed origin no Access-Control-Allow-Origin, on preflights and requests', async () => {
    const pre = await preflight('https://evil.example.net', withCors);
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
    const res = await inject({ method: 'GET', url: '/system/dept-api/list', headers: { ...auth(), origin: 'https://evil.example.net' } }, withCors);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('lets an allowed origin read the answer and the Location and X-Request-Id headers', async () => {
    const res = await inject(
      {
        method: 'POST',
        url: '/system/dept-api',
        headers: { ...auth(), origin: 'http://localhost:5173' },
        payload: { parentId: 100, deptName: 'Cors' },
      },
      withCors,
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(String(res.headers['access-control-expose-headers'])).toMatch(/Location/);
    expect(String(res.headers['access-control-expose-headers'])).toMatch(/X-Request-Id/);
    expectSecurityHeaders(res.headers);
  });
});
