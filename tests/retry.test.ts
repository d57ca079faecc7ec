import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { openPostgres, type Database } from '../src/db/database.js';
import { ADMIN_PASSWORD } from './support/app.js';
import { cutDatabase, type CutProxy } from './support/cut-proxy.js';
import { expectTreeInvariants } from './support/invariants.js';
import { recordedPool } from './support/statement-log.js';

// docs/operations.md#retries with real connection cuts: the app talks to
// PostgreSQL through a loopback proxy (tests/support/cut-proxy.ts) that cuts
// a connection when it sees a chosen statement. A transaction cut before its
// COMMIT went out runs once more on a fresh connection; one cut after its
// COMMIT went out is answered 503 and never run again (unless it was READ
// ONLY); a read is run once more; a second cut is a 503, never a 500. The app's pool has a single
// connection, so every retry reconnects the very connection postgres.js has
// just closed: a driver left in a bad state there would fail the retry.
// The database that stops answering (not retried) is tests/outage.test.ts.
// PostgreSQL only: the embedded database lives inside the process.

const INSERT_DEPT = /INSERT INTO sys_dept/;
const COMMIT = /^commit$/i;
const DEPT_BY_ID = /FROM sys_dept\s+WHERE tenant_id = \$1 AND dept_id = \$2/;
const CHART_ROWS = /'\{"deptId":' \|\| /;
const SESSION = /FROM auth_session s\s+JOIN sys_user/;

describe.skipIf(!inject('databaseUrl'))('a connection cut at the worst moment', () => {
  let db: Awaited<ReturnType<typeof cutDatabase>>;
  let proxy: CutProxy;
  let viaProxy: Database;
  let direct: Database;
  let app: FastifyInstance;
  let token: string;
  let seq = 0;

  beforeAll(async () => {
    db = await cutDatabase(inject('databaseUrl'), inject('templateDatabase'), 'retry');
    proxy = db.proxy;
    viaProxy = openPostgres(db.proxied, { max: 1, ...recordedPool() });
    direct = openPostgres(db.direct, { max: 2 });
    app = await buildApp({ sql: viaProxy.sql, config: { jwtSecret: undefined, tokenTtl: 600, logLevel: 'silent' }, logger: false });
    await app.ready();
    token = await login();
  });
  afterEach(() => proxy.reset());
  afterAll(async () => {
    await proxy?.close();
    await app?.close();
    await viaProxy?.close();
    await direct?.close();
    await db?.drop();
  });

  async function login(): Promise<string> {
    const res = await app.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD },
    });
    expect(res.statusCode).toBe(200);
    return res.json().data.access_token;
  }

  async function call(method: 'GET' | 'POST', url: string, payload?: object, as = token) {
    const res = await app.inject({ method, url, headers: { authorization: `Bearer ${as}` }, ...(payload ? { payload } : {}) });
    return { status: res.statusCode, body: res.json(), location: res.headers.location };
  }

  /** Unique in the database, within deptName's 100 characters. */
  const uniqueName = (what: string) => `${what} ${++seq}-${randomBytes(2).toString('hex')}`;

  async function createDept(deptName: string): Promise<number> {
    const res = await call('POST', '/system/dept-api', { parentId: 0, deptName });
    expect(res.status).toBe(200);
    return Number(String(res.location).split('/').pop());
  }

  async function stored(deptName: string) {
    const depts = await direct.sql<{ deptId: number }[]>`SELECT dept_id AS "deptId" FROM sys_dept WHERE dept_name = ${deptName}`;
    const [audit] = await direct.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM audit_log
      WHERE action = 'dept.create' AND entity_type = 'dept' AND changes->>'deptName' = ${deptName}`;
    return { depts: depts.length, audit: audit!.n, deptIds: depts.map((d) => d.deptId) };
  }

  function expectUnavailable(res: { status: number; body: { code: number; msg: string; data: unknown } }) {
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 503, data: null });
    expect(res.body.msg).toMatch(/^The database is unavailable; retry later \(request id /);
  }

  describe.each(['close', 'reset'] as const)('cut by a %s', (how) => {
    it('a write cut before its COMMIT is run once more on a fresh connection: 200, one department, one audit record', async () => {
      const deptName = uniqueName(`Before commit, ${how}`);
      const cut = proxy.cutAt({ sql: INSERT_DEPT, when: 'before', how });
      const inserts = proxy.count(INSERT_DEPT);
      const connections = proxy.connections;

      const res = await call('POST', '/system/dept-api', { parentId: 0, deptName });

      expect(res.status).toBe(200);
      expect(res.body).toEqual({ code: 200, msg: 'success', data: null });
      expect(cut.hits()).toBe(1);
      // The server ran the INSERT once, from the retry, on a connection opened for it.
      expect(inserts.runs()).toBe(1);
      expect(proxy.connections).toBe(connections + 1);
      const after = await stored(deptName);
      expect(after).toMatchObject({ depts: 1, audit: 1 });
      expect(res.location).toBe(`/system/dept-api/${after.deptIds[0]}`);
      // The reconnected pool goes on answering.
      expect((await call('GET', `/system/dept-api/${after.deptIds[0]}`)).status).toBe(200);
      await expectTreeInvariants(direct.sql);
    });
  });

  it('a write cut after its COMMIT went out answers 503 (the outcome is unknown) and is never run again', async () => {
    const deptName = uniqueName('After commit');
    const cut = proxy.cutAt({ sql: COMMIT, after: INSERT_DEPT, when: 'after' });
    const inserts = proxy.count(INSERT_DEPT);

    const res = await call('POST', '/system/dept-api', { parentId: 0, deptName });

    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 503, data: null });
    expect(res.body.msg).toMatch(/^The database connection was lost while the change was being committed; it may or may not have been applied/);
    expect(res.body.msg).toMatch(/read it back before repeating it \(request id /);
    expect(cut.hits()).toBe(1);
    expect(inserts.runs()).toBe(1);
    await proxy.serverDone();
    // The server got the COMMIT, so the department is usually there: at most once, with its audit record.
    const after = await stored(deptName);
    expect(after.depts).toBeLessThanOrEqual(1);
    expect(after.audit).toBe(after.depts);
    expect((await call('POST', '/system/dept-api', { parentId: 0, deptName: uniqueName('After the cut') })).status).toBe(200);
    await expectTreeInvariants(direct.sql);
  });

  it('a read by id whose connection is cut is run once more: 200 with the department', async () => {
    const deptName = uniqueName('Read by id');
    const id = await createDept(deptName);
    const cut = proxy.cutAt({ sql: DEPT_BY_ID, when: 'before' });
    const reads = proxy.count(DEPT_BY_ID);

    const res = await call('GET', `/system/dept-api/${id}`);

    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ deptId: id, parentId: 0, deptName });
    expect(cut.hits()).toBe(1);
    expect(reads.runs()).toBe(1);
  });

  it('a list whose connection is cut is run once more: 200 with the departments', async () => {
    const deptName = uniqueName('Listed');
    const id = await createDept(deptName);
    const cut = proxy.cutAt({ sql: CHART_ROWS, when: 'before' });

    const res = await call('GET', `/system/dept-api/list?deptName=${encodeURIComponent(deptName)}`);

    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([expect.objectContaining({ deptId: id, deptName })]);
    expect(cut.hits()).toBe(1);
  });

  it('a read-only transaction cut after its COMMIT went out is run once more: its outcome changes nothing', async () => {
    const deptName = uniqueName('Read-only commit');
    const id = await createDept(deptName);
    const cut = proxy.cutAt({ sql: COMMIT, after: CHART_ROWS, when: 'after' });
    const reads = proxy.count(CHART_ROWS);

    const res = await call('GET', `/system/dept-api/list?deptName=${encodeURIComponent(deptName)}`);

    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([expect.objectContaining({ deptId: id, deptName })]);
    expect(cut.hits()).toBe(1);
    expect(reads.runs()).toBe(2);
  });

  it("a request's session read whose connection is cut is run once more: 200", async () => {
    // A new sign-in: its token is in no session cache yet, so the request reads its session.
    const fresh = await login();
    const cut = proxy.cutAt({ sql: SESSION, when: 'before' });

    const res = await call('GET', '/system/dept-api/list', undefined, fresh);

    expect(res.status).toBe(200);
    expect(cut.hits()).toBe(1);
  });

  describe('a second cut during the retry: 503, never 500', () => {
    it('a write: both attempts rolled back', async () => {
      const deptName = uniqueName('Cut twice');
      const cut = proxy.cutAt({ sql: INSERT_DEPT, when: 'before', times: 2 });

      expectUnavailable(await call('POST', '/system/dept-api', { parentId: 0, deptName }));

      expect(cut.hits()).toBe(2);
      expect(await stored(deptName)).toMatchObject({ depts: 0, audit: 0 });
      expect((await call('POST', '/system/dept-api', { parentId: 0, deptName })).status).toBe(200);
      await expectTreeInvariants(direct.sql);
    });

    it('a read by id', async () => {
      const id = await createDept(uniqueName('Read twice'));
      const cut = proxy.cutAt({ sql: DEPT_BY_ID, when: 'before', times: 2 });

      expectUnavailable(await call('GET', `/system/dept-api/${id}`));

      expect(cut.hits()).toBe(2);
      expect((await call('GET', `/system/dept-api/${id}`)).status).toBe(200);
    });

    it('a list: its handler and its read transaction share the one retry', async () => {
      const deptName = uniqueName('Listed twice');
      await createDept(deptName);
      // A third cut is armed: a second retry (handler and transaction each retrying) would meet it too.
      const cut = proxy.cutAt({ sql: CHART_ROWS, when: 'before', times: 3 });

      expectUnavailable(await call('GET', `/system/dept-api/list?deptName=${encodeURIComponent(deptName)}`));

      expect(cut.hits()).toBe(2);
      proxy.reset();
      expect((await call('GET', `/system/dept-api/list?deptName=${encodeURIComponent(deptName)}`)).status).toBe(200);
    });
  });
});
