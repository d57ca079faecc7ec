import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenManagement, type ManagementListener } from '../src/metrics/management.server.js';
import { buildTestApp, createdId, type Client, type TestApp, ADMIN_PASSWORD } from './support/app.js';
import { parseExposition, sampleOf, type Sample } from './support/exposition.js';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';
import { freePort, run, serviceDatabase, startService, type ServiceDatabase } from './support/service.js';

// docs/operations.md#metrics: the management listener's /metrics, scraped over
// loopback HTTP, against requests this file makes and knows the answers of;
// /healthz and /readyz there answer as the public ones; the API never serves
// /metrics; a taken management port stops the start naming it.

let t: TestApp;
let management: ManagementListener;
let admin: Client;
let rootDept: number;

beforeAll(async () => {
  // A long session cache, so the hits and misses counted below are exactly the ones made here.
  t = await buildTestApp({ sessionCacheMs: 60_000 });
  management = await listenManagement(t.app, { host: '127.0.0.1', port: 0 });
  ({ rootDeptId: rootDept, admin } = await createTenantWithAdmin(t));
});
afterAll(async () => {
  await management?.close();
  await t?.close();
});

async function scrape(): Promise<{ samples: Sample[]; text: string }> {
  const res = await fetch(`http://127.0.0.1:${management.port}/metrics`, { signal: AbortSignal.timeout(10_000) });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  return { samples: parseExposition(text), text };
}

const requestCount = (samples: Sample[], method: string, route: string, status: number) =>
  sampleOf(samples, 'http_request_duration_seconds_count', { method, route, status_code: String(status) }) ?? 0;

describe('GET /metrics on the management listener', () => {
  it('counts each request under its method, route template and status, never a raw id or query', async () => {
    const before = (await scrape()).samples;
    const id = createdId(await admin.post('/system/dept-api', { parentId: rootDept, deptName: 'Metrics' }));
    expect((await admin.get(`/system/dept-api/${id}`)).status).toBe(200);
    expect((await admin.get(`/system/dept-api/${id}?x=1`)).status).toBe(200);
    expect((await admin.get('/system/dept-api/987654321')).status).toBe(404);
    expect((await admin.get('/system/dept-api/abc')).status).toBe(400);
    expect((await admin.post('/system/dept-api', { parentId: rootDept, deptName: 'x'.repeat(500) })).status).toBe(400);
    expect((await t.anon.get('/no/such/path/123')).status).toBe(404);
    const after = (await scrape()).samples;

    const delta = (method: string, route: string, status: number) =>
      requestCount(after, method, route, status) - requestCount(before, method, route, status);
    expect(delta('POST', '/system/dept-api', 200)).toBe(1);
    expect(delta('GET', '/system/dept-api/:id', 200)).toBe(2);
    expect(delta('GET', '/system/dept-api/:id', 404)).toBe(1);
    expect(delta('GET', '/system/dept-api/:id', 400)).toBe(1);
    expect(delta('POST', '/system/dept-api', 400)).toBe(1);
    expect(delta('GET', 'unmatched', 404)).toBe(1);
    // The login of buildTestApp, before the first scrape.
    expect(requestCount(before, 'POST', '/auth/login', 200)).toBeGreaterThanOrEqual(1);

    const routes = new Set(after.filter((s) => s.name.startsWith('http_request_duration_seconds')).map((s) => s.labels.route));
    for (const route of routes) {
      expect(route === 'unmatched' || /^\/[a-z/_:-]*$/.test(route!), `route label ${route}`).toBe(true);
      expect(route).not.toMatch(/\d/);
    }
    // Histogram buckets are cumulative and end in +Inf = count.
    const inf = sampleOf(after, 'http_request_duration_seconds_bucket', {
      method: 'GET',
      route: '/system/dept-api/:id',
      status_code: '200',
      le: '+Inf',
    });
    expect(inf).toBe(requestCount(after, 'GET', '/system/dept-api/:id', 200));
    const series = { method: 'GET', route: '/system/dept-api/:id', status_code: '200' };
    const buckets = after
      .filter((s) => s.name === 'http_request_duration_seconds_bucket' && Object.entries(series).every(([k, v]) => s.labels[k] === v))
      .map((s) => [s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), s.value] as const)
      .sort(([a], [b]) => a - b);
    expect(buckets.map(([le]) => le)).toEqual([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, Infinity]);
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]![1]).toBeGreaterThanOrEqual(buckets[i - 1]![1]);
    // Each read took well under 10 s: every one is in the last finite bucket, and the sum is of seconds, not milliseconds.
    expect(buckets.at(-2)![1]).toBe(inf);
    const sum = sampleOf(after, 'http_request_duration_seconds_sum', series)!;
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(inf! * 10);
  });

  it('counts chart and session cache hits and misses', async () => {
    const fresh = await t.login('000000', 'admin', ADMIN_PASSWORD);
    await admin.post('/system/dept-api', { parentId: rootDept, deptName: 'Chart change' });
    const before = (await scrape()).samples;
    // A new token: its first request reads the session (a miss), the next two find it (hits).
    expect((await fresh.get('/system/tenant-api/list')).status).toBe(200);
    expect((await fresh.get('/system/tenant-api/list')).status).toBe(200);
    expect((await fresh.get('/system/tenant-api/list')).status).toBe(200);
    // The chart changed with the write above: built once (a miss), then served from the cache (a hit).
    expect((await admin.get('/system/dept-api/list')).status).toBe(200);
    expect((await admin.get('/system/dept-api/list')).status).toBe(200);
    const after = (await scrape()).samples;
    const delta = (name: string) => sampleOf(after, name)! - sampleOf(before, name)!;
    expect(delta('session_cache_misses_total')).toBe(1);
    expect(delta('session_cache_hits_total')).toBe(4);
    expect(delta('chart_cache_misses_total')).toBe(1);
    expect(delta('chart_cache_hits_total')).toBe(1);
  });

  it("reports the audit feed's backlog and last position as the database has them", async () => {
    await admin.post('/system/dept-api', { parentId: rootDept, deptName: 'Audited' });
    // The sequencer runs in the background after a write; wait for it, then the gauges must match the tables.
    await expect
      .poll(async () => (await t.sql`SELECT 1 FROM audit_log WHERE position IS NULL LIMIT 1`).length, { timeout: 10_000, interval: 50 })
      .toBe(0);
    const { samples } = await scrape();
    const [feed] = await t.sql<{ last_position: number }[]>`SELECT last_position FROM audit_feed WHERE id = 1`;
    expect(sampleOf(samples, 'audit_feed_unsequenced_records')).toBe(0);
    expect(sampleOf(samples, 'audit_feed_last_position')).toBe(feed!.last_position);
    expect(feed!.last_position).toBeGreaterThan(0);
  });

  it("reports the database's queries and connections, and the process", async () => {
    const before = (await scrape()).samples;
    await admin.get(`/system/dept-api/${rootDept}`);
    const after = (await scrape()).samples;
    expect(sampleOf(after, 'db_query_duration_seconds_count')!).toBeGreaterThan(sampleOf(before, 'db_query_duration_seconds_count')!);
    expect(sampleOf(after, 'db_query_duration_seconds_sum')!).toBeGreaterThan(0);
    const open = sampleOf(after, 'db_pool_connections', { state: 'busy' })! + sampleOf(after, 'db_pool_connections', { state: 'idle' })!;
    expect(open).toBeGreaterThan(0);
    expect(sampleOf(after, 'db_queries_in_flight')).toBeGreaterThanOrEqual(0);
    expect(sampleOf(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sampleOf(after, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('answers /healthz and /readyz as the public listener does, and 404 elsewhere', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(`http://127.0.0.1:${management.port}${path}`);
      const pub = await t.app.inject({ method: 'GET', url: path });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(pub.body);
    }
    expect((await fetch(`http://127.0.0.1:${management.port}/system/dept-api/list`)).status).toBe(404);
  });

  it('is never served on the public listener', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(404);
    expect(res.body).not.toContain('http_request_duration_seconds');
  });
});

describe('the service with MANAGEMENT_PORT', () => {
  let db: ServiceDatabase;
  beforeAll(async () => {
    db = await serviceDatabase();
  });
  afterAll(async () => db?.dispose());

  it('serves /metrics on the management port and not on the API port', async () => {
    const port = await freePort();
    const service = await startService({ ...db.env, MANAGEMENT_PORT: String(port), ADMIN_PASSWORD });
    try {
      const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain('process_resident_memory_bytes');
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      expect((await fetch(`${service.base}/metrics`)).status).toBe(404);
    } finally {
      expect((await service.stop()).code).toBe(0);
    }
  });

  it('refuses to start when the management port is taken, naming it', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const r = run('main', { ...db.env, PORT: '0', HOST: '127.0.0.1', MANAGEMENT_PORT: String(port), ADMIN_PASSWORD });
      const exit = await r.exited;
      expect(exit.code).not.toBe(0);
      expect(r.output()).toContain(`MANAGEMENT_PORT ${port} on 127.0.0.1 is already in use`);
      expect(r.output()).not.toContain('Server listening');
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});
