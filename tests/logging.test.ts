import { createServer, type Server } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ADMIN_PASSWORD, buildTestApp, Client, type TestApp } from './support/app.js';
import { call, run, serviceDatabase, startService } from './support/service.js';

// Logs never contain passwords or tokens, at the most verbose level,
// whether a request succeeds, is refused or fails validation.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

describe('logging', () => {
  it('never writes a password or a token, even at trace level', async () => {
    const stream = new PassThrough();
    let log = '';
    stream.on('data', (chunk) => (log += chunk));
    const app = await buildApp({ sql: t.appSql, config: { jwtSecret: undefined, tokenTtl: 600, logLevel: 'trace' }, logStream: stream });
    const anon = new Client(app);
    const login = await anon.post('/auth/login', { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD });
    const token = login.body.data.access_token as string;
    const admin = new Client(app, token);
    await admin.post('/system/user-api', { userName: 'logged', password: 'user-secret-pw-1', roles: ['user'] });
    await admin.post('/system/user-api', { userName: 'x', password: 'pw2shrt', roles: ['user'] });
    await anon.post('/auth/login', { tenantId: '000000', username: 'admin', password: 'wrong-password-9' });
    await new Client(app, `${token}x`).get('/system/dept-api/list');
    await admin.get('/system/dept-api/list');
    await app.close();

    expect(log).toContain('"reqId"');
    // Each of the six requests is logged once it is answered, refused ones included.
    expect(log.match(/"msg":"request completed"/g)).toHaveLength(6);
    for (const secret of [ADMIN_PASSWORD, 'user-secret-pw-1', 'pw2shrt', 'wrong-password-9', token, token.split('.')[2]!]) {
      expect(log).not.toContain(secret);
    }
  });
});

/** An app logging at `level` into a string, and its lines parsed. */
/** An app logging at `level` into memory; `pinoMetadata` marks the stream as one that wants pino's metadata, so every line takes pino's own path. */
async function loggedApp(level: string, pinoMetadata = false) {
  const stream = Object.assign(new PassThrough(), pinoMetadata ? { [Symbol.for('pino.metadata')]: true } : {});
  let log = '';
  stream.on('data', (chunk) => (log += chunk));
  const app = await buildApp({ sql: t.appSql, config: { jwtSecret: undefined, tokenTtl: 600, logLevel: level }, logStream: stream });
  const lines = () => log.split('\n').filter((line) => line !== '');
  return { app, lines };
}

describe('log shape', () => {
  it('a refused request is one line with one msg and the reason in its own field', async () => {
    const { app, lines } = await loggedApp('info');
    await new Client(app).get('/system/dept-api/list');
    await new Client(app).post('/system/dept-api', { parentId: 0, deptName: '' });
    await app.close();

    for (const line of lines()) expect(line.match(/"msg":/g), line).toHaveLength(1);
    const refused = lines()
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.msg === 'request refused');
    expect(refused).toHaveLength(2);
    expect(refused[0]).toMatchObject({
      level: 30,
      status: 401,
      reason: 'Missing Authorization header; send "Bearer <access_token>" or "Bearer <API key>"',
    });
    expect(refused[1]).toMatchObject({ level: 30, status: 401 });
    expect(refused[0].reqId).toBeTruthy();
  });

  it('an answered request is one line, with method, URL, client, status and time', async () => {
    const { app, lines } = await loggedApp('info');
    await new Client(app, t.root.token).get('/system/dept-api/list?status=0');
    await app.close();

    const entries = lines().map((line) => JSON.parse(line));
    const ours = entries.filter((entry) => entry.req?.url === '/system/dept-api/list?status=0');
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatchObject({
      level: 30,
      msg: 'request completed',
      req: { method: 'GET', remoteAddress: expect.any(String) },
      res: { statusCode: 200 },
    });
    expect(ours[0].responseTime).toBeGreaterThan(0);
    expect(entries.filter((entry) => entry.msg === 'incoming request')).toHaveLength(0);
  });

  it("an answered request's line is, field for field, the line pino writes with Fastify's serializers", async () => {
    const send = async (app: Awaited<ReturnType<typeof loggedApp>>['app']) => {
      await app.inject({
        method: 'GET',
        url: '/system/dept-api/5?q="x"&n=%E4%B8%AD',
        headers: { 'x-request-id': 'same-id', 'accept-version': '1.x' },
      });
      await app.inject({
        method: 'GET',
        url: '/system/dept-api/list',
        headers: { 'x-request-id': 'other-id', authorization: `Bearer ${t.root.token}` },
      });
    };
    const written = await loggedApp('info');
    const pinos = await loggedApp('info', true);
    await send(written.app);
    await send(pinos.app);
    await Promise.all([written.app.close(), pinos.app.close()]);
    const answered = (lines: string[]) =>
      lines
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.msg === 'request completed')
        .map(({ time, responseTime, ...rest }) => {
          expect(typeof time).toBe('number');
          expect(responseTime).toBeGreaterThan(0);
          return rest;
        });
    const ours = answered(written.lines());
    expect(ours).toHaveLength(2);
    expect(ours).toEqual(answered(pinos.lines()));
    expect(ours[0]).toMatchObject({ level: 30, reqId: 'same-id', req: { method: 'GET', version: '1.x' }, res: { statusCode: 401 } });
    expect(ours[1]).toMatchObject({ reqId: 'other-id', res: { statusCode: 200 } });
    // The key order too: level, time, the bindings, req, res, responseTime, msg.
    expect(Object.keys(JSON.parse(written.lines().find((l) => l.includes('other-id'))!))).toEqual(
      Object.keys(JSON.parse(pinos.lines().find((l) => l.includes('other-id'))!)),
    );
  });

  it('health probes are not logged at info; other requests are', async () => {
    const { app, lines } = await loggedApp('info');
    const anon = new Client(app);
    expect((await anon.get('/healthz')).status).toBe(200);
    expect((await anon.get('/readyz')).status).toBe(200);
    await anon.get('/system/dept-api/tree');
    await app.close();

    const text = lines().join('\n');
    expect(text).not.toMatch(/healthz|readyz/);
    expect(text).toContain('/system/dept-api/tree');
  });
});

describe('the log of the built process', () => {
  // Under load many lines share one write (src/http/log.destination.ts): each must still come out whole, once, and
  // all of them before the process ends, including those gathered when SIGTERM arrives.
  it('writes every line of a burst whole and once, the last of them before the process exits', async () => {
    const db = await serviceDatabase();
    const service = await startService({ ...db.env, LOG_LEVEL: 'info' });
    try {
      const paths = Array.from({ length: 400 }, (_, i) => `/system/dept-api/list?burst=${i}`);
      for (let i = 0; i < paths.length; i += 40) await Promise.all(paths.slice(i, i + 40).map((p) => call(service.base, 'GET', p)));
      service.child.kill('SIGTERM');
      expect(await service.exited).toEqual({ code: 0, signal: null });
      const lines = service
        .output()
        .split('\n')
        .filter((l) => l.includes('burst='));
      const urls = lines.map((l) => (JSON.parse(l) as { req: { url: string } }).req.url);
      expect(urls.sort()).toEqual([...paths].sort());
      // The process's last line, written just before it exits.
      expect(service.output()).toContain('"outcome":"clean","msg":"stopped"');
    } finally {
      await service.stop();
      await db.dispose();
    }
  });

  // A start that fails after the app exists (its management port taken) ends in process.exit within
  // milliseconds of its last log line: the exit hook, not the batch's timer, must write that line.
  it('writes the lines gathered when the process exits at once', async () => {
    const db = await serviceDatabase();
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    try {
      const port = (holder.address() as { port: number }).port;
      const r = run('main', { ...db.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', MANAGEMENT_PORT: String(port) });
      expect((await r.exited).code).not.toBe(0);
      expect(r.output()).toContain('"msg":"database ready"');
    } finally {
      await new Promise((resolve) => holder.close(resolve));
      await db.dispose();
    }
  });

  // Lines are gathered into 16 KiB writes (src/http/log.destination.ts); a quiet service must still show
  // each one promptly, not when 16 KiB have gathered (docs/operations.md#logs).
  it("shows a quiet service's one request line within a fraction of a second", async () => {
    const db = await serviceDatabase();
    const service = await startService({ ...db.env, LOG_LEVEL: 'info' });
    try {
      const path = `/system/dept-api/list?quiet=${Date.now()}`;
      expect((await call(service.base, 'GET', path)).status).toBe(401);
      const answered = Date.now();
      // The flush comes every 250 ms; 2 s leaves room for a busy test machine.
      while (!service.output().includes(path) && Date.now() - answered < 2_000) await new Promise((r) => setTimeout(r, 20));
      const line = service
        .output()
        .split('\n')
        .find((l) => l.includes(path));
      expect(line, service.output()).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({ msg: 'request completed', res: { statusCode: 401 } });
    } finally {
      await service.stop();
      await db.dispose();
    }
  });
});
