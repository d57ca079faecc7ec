import { createServer, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it, type ExpectStatic } from 'vitest';
import { buildApp } from '../src/app.js';
import { bootstrap } from '../src/bootstrap.js';
import { openPostgres, type Database } from '../src/db/database.js';
import { LOCK } from '../src/db/locks.js';
import { migrate } from '../src/db/migrate.js';
import { ADMIN_PASSWORD } from './support/app.js';
import { FreezeProxy } from './support/freeze-proxy.js';
import { expectTreeInvariants } from './support/invariants.js';
import { run, serviceDatabase, type ServiceDatabase } from './support/service.js';
import { recordedPool } from './support/statement-log.js';

// docs/operations.md with a real fault: the app talks to PostgreSQL through a
// loopback proxy the test freezes (sockets stay open, nothing moves) and
// thaws. During the freeze requests answer 503 envelopes within 10 s,
// /readyz 503, /healthz 200; after the thaw the same app recovers on its
// own; a write cut off by the freeze is all there or not there at all. Its
// 503 in time also shows that a database that stopped answering is not
// asked again (docs/operations.md#retries): a retry would wait past the
// request deadline. A scrape of the metrics answers in time meanwhile.
// Connections cut at a chosen statement: tests/retry.test.ts.
// PostgreSQL only: the embedded database lives inside the process.

const TEN_SECONDS = 10_000;

async function startAgainst(port: number, expect: ExpectStatic) {
  const service = run('main', { DATABASE_URL: `postgres://app:sekrit-pw@127.0.0.1:${port}/orgchart`, DB_START_TIMEOUT: '2', PORT: '0' });
  const exit = await service.exited;
  expect(exit.code).not.toBe(0);
  expect(exit.code).not.toBeNull();
  const output = service.output();
  expect(output).toContain(`PostgreSQL at 127.0.0.1:${port}/orgchart did not answer within 2 s`);
  expect(output).not.toContain('sekrit-pw');
  return output;
}

// The two start-ups wait out their DB_START_TIMEOUT side by side.
describe.concurrent('start-up against a database that is not there', () => {
  it('retries a refusing port with back-off for DB_START_TIMEOUT, then exits non-zero naming it', async ({ expect }) => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
    expect(await startAgainst(port, expect)).toMatch(/not answering \(.*ECONNREFUSED.*\); retrying in/);
  });

  it('gives up on a listener that accepts and never answers after DB_START_TIMEOUT, never showing the password', async ({ expect }) => {
    // Accepts connections and never says a word.
    const sockets: Socket[] = [];
    const silent = createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      await startAgainst(port, expect);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});

describe.skipIf(!inject('databaseUrl'))('a PostgreSQL that stops answering', () => {
  let target: ServiceDatabase;
  let proxy: FreezeProxy;
  let viaProxy: Database;
  let direct: Database;
  let app: FastifyInstance;
  let token: string;

  beforeAll(async () => {
    target = await serviceDatabase();
    const url = new URL(target.directUrl!);
    proxy = new FreezeProxy(url.hostname, Number(url.port || 5432));
    const proxied = new URL(url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(await proxy.listen());
    viaProxy = openPostgres(proxied.toString(), recordedPool());
    direct = openPostgres(url.toString(), { max: 2 });
    await migrate(viaProxy.sql);
    await bootstrap(viaProxy.sql, ADMIN_PASSWORD);
    app = await buildApp({ sql: viaProxy.sql, config: { jwtSecret: undefined, tokenTtl: 600, logLevel: 'silent' }, logger: false });
    await app.ready();
    const login = await app.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD },
    });
    token = login.json().data.access_token;
  });
  afterAll(async () => {
    await proxy?.close();
    await app?.close();
    await viaProxy?.close();
    await direct?.close();
    await target?.dispose();
  });

  async function timed(method: 'GET' | 'POST', url: string, payload?: object) {
    const started = performance.now();
    const res = await app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
    return { status: res.statusCode, body: res.json(), ms: performance.now() - started };
  }

  /** A scrape of the app's metrics (docs/operations.md#metrics), timed. */
  async function scrape() {
    const started = performance.now();
    const text = await app.metrics.metrics();
    return { text, ms: performance.now() - started };
  }

  function expect503(res: { status: number; body: { code: number; data: unknown; msg: string }; ms: number }) {
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 503, data: null });
    // From the database deadlines (src/db/deadline.ts), not the request deadline's backstop.
    expect(res.body.msg).toMatch(/^The database is unavailable; retry later/);
    expect(res.ms).toBeLessThan(TEN_SECONDS);
  }

  it('answers 503 within 10 s while frozen (/readyz 503, /healthz 200) and recovers by itself after the thaw', async () => {
    const made = await timed('POST', '/system/dept-api', { parentId: 0, deptName: 'Before the freeze' });
    expect(made.status).toBe(200);
    const dept = (await timed('GET', '/system/dept-api/list?deptName=Before')).body.data[0].deptId;

    proxy.freeze();
    try {
      // Requests on connections that go silent, and (second wave) on new connections that never get an answer.
      for (let wave = 0; wave < 2; wave++) {
        const [read, write, ready, health, metrics] = await Promise.all([
          timed('GET', `/system/dept-api/${dept}`),
          timed('POST', '/system/dept-api', { parentId: 0, deptName: `During the freeze ${wave}` }),
          timed('GET', '/readyz'),
          timed('GET', '/healthz'),
          scrape(),
        ]);
        expect503(read);
        expect503(write);
        expect(ready.status).toBe(503);
        expect(ready.ms).toBeLessThan(TEN_SECONDS);
        expect(health.status).toBe(200);
        // The scrape does not wait for the silent database: its feed gauges say they have no answer (prom-client writes NaN as "Nan", which Prometheus reads).
        expect(metrics.ms).toBeLessThan(2_000);
        expect(metrics.text).toMatch(/^audit_feed_unsequenced_records nan$/im);
        expect(metrics.text).toMatch(/^audit_feed_last_position nan$/im);
      }
    } finally {
      proxy.thaw();
    }

    await expect.poll(async () => (await timed('GET', `/system/dept-api/${dept}`)).status, { timeout: 20_000, interval: 250 }).toBe(200);
    expect((await timed('GET', '/readyz')).status).toBe(200);
    // The sequencer hands out positions on its own beat after the thaw, so the gauge is watched rather than read once.
    await expect.poll(async () => (await scrape()).text, { timeout: 10_000, interval: 250 }).toMatch(/^audit_feed_last_position [1-9]\d*$/m);
    expect((await timed('POST', '/system/dept-api', { parentId: 0, deptName: 'After the thaw' })).status).toBe(200);
    await expectTreeInvariants(direct.sql);
  });

  it('a write cut off mid-transaction by the freeze leaves nothing half-written', async () => {
    // A tenant create with its admin is several statements: tenant row, then
    // its department, then (under the new tenant's users lock) its admin user.
    // The test holds that lock, so the transaction stops after the tenant row
    // and its department; then the database freezes and the lock is released.
    const [seq] = await direct.sql<{ lastValue: number; isCalled: boolean }[]>`
      SELECT last_value AS "lastValue", is_called AS "isCalled" FROM sys_tenant_code_seq`;
    const nextCode = String(seq!.isCalled ? seq!.lastValue + 1 : seq!.lastValue);
    const held = await direct.sql.reserve();
    await held`SELECT pg_advisory_lock(${LOCK.users}, hashtext(${nextCode}))`;
    const companyName = `Cut off ${Date.now()}`;
    const pending = timed('POST', '/system/tenant-api', {
      tenantName: 'Cut',
      companyName,
      contactUserName: 'c',
      contactPhone: '1',
      username: 'admin',
      password: 'cut-off-pw-1',
    });
    await expect
      .poll(async () => (await direct.sql`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).length, {
        timeout: 10_000,
        interval: 50,
      })
      .toBe(1);
    proxy.freeze();
    try {
      await held`SELECT pg_advisory_unlock(${LOCK.users}, hashtext(${nextCode}))`;
      expect503(await pending);
    } finally {
      held.release();
      proxy.thaw();
    }
    // The server notices the vanished client and rolls its transaction back.
    await expect
      .poll(
        async () =>
          (await direct.sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).length,
        {
          timeout: 20_000,
          interval: 100,
        },
      )
      .toBe(0);
    const [tenants] = await direct.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sys_tenant WHERE company_name = ${companyName}`;
    const [depts] = await direct.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sys_dept WHERE tenant_id = ${nextCode}`;
    const [users] = await direct.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sys_user WHERE tenant_id = ${nextCode}`;
    expect([tenants!.n, depts!.n, users!.n]).toSatisfy((counts: number[]) => counts.every((n) => n === 0) || counts.every((n) => n === 1));
    await expectTreeInvariants(direct.sql);
  });
});
