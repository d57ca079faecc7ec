import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ADMIN_PASSWORD, buildTestApp, Client, type TestApp } from './support/app.js';

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
async function loggedApp(level: string) {
  const stream = new PassThrough();
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
