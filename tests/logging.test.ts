import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ADMIN_PASSWORD, buildTestApp, Client, type TestApp } from './support/app.js';

// Issue 2: logs never contain passwords or tokens, at the most verbose level,
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
    const app = await buildApp({ sql: t.sql, config: { jwtSecret: undefined, tokenTtl: 600, logLevel: 'trace' }, logStream: stream });
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
    expect(log.split('\n').length).toBeGreaterThan(10);
    for (const secret of [ADMIN_PASSWORD, 'user-secret-pw-1', 'pw2shrt', 'wrong-password-9', token, token.split('.')[2]!]) {
      expect(log).not.toContain(secret);
    }
  });
});
