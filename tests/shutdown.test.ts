import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, loginAt, run, serviceDatabase, startService, type Service, type ServiceDatabase } from './support/service.js';

// docs/operations.md on a real process: SIGTERM stops new connections, lets the
// requests in flight finish for up to SHUTDOWN_TIMEOUT, exits 0 when clean
// and non-zero when it had to cut one off. ADMIN_PASSWORD that no longer
// matches is warned about; `npm run reset-password` recovers the admin.
//
// A request is made "in flight" deterministically: the test sends its
// headers with `Expect: 100-continue`, waits for the server's 100 Continue
// (the server has the request), signals, and only then sends the body.

const PASSWORD = 'shutdown-pw-1';
let db: ServiceDatabase;
const running: Service[] = [];

beforeAll(async () => {
  db = await serviceDatabase();
});
afterAll(async () => {
  for (const s of running) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  await Promise.all(running.map((s) => s.exited));
  await db?.dispose();
});

async function start(env: Record<string, string> = {}): Promise<Service> {
  const service = await startService({ ...db.env, ADMIN_PASSWORD: PASSWORD, ...env });
  running.push(service);
  return service;
}

/** Sends a POST's headers, waits for 100 Continue, and returns the socket and a way to finish the body. */
async function halfSentPost(base: string, path: string, token: string, body: unknown) {
  const { hostname, port } = new URL(base);
  const payload = JSON.stringify(body);
  const socket: Socket = connect(Number(port), hostname);
  let received = '';
  socket.on('data', (d) => (received += d));
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(payload)}\r\nExpect: 100-continue\r\n\r\n`,
  );
  await new Promise<void>((resolve, reject) => {
    const check = () => (received.includes('100 Continue') ? resolve() : undefined);
    socket.on('data', check);
    socket.once('error', reject);
  });
  const answer = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  return { finish: () => socket.write(payload), answer, socket };
}

describe('graceful shutdown', () => {
  it('a request in flight when SIGTERM arrives still gets its answer, new connections are refused, exit 0', async () => {
    const service = await start({ SHUTDOWN_TIMEOUT: '20' });
    const token = await loginAt(service.base, '000000', 'admin', PASSWORD);
    const request = await halfSentPost(service.base, '/system/dept-api', token, { parentId: 0, deptName: 'Sent during shutdown' });
    service.child.kill('SIGTERM');
    // The listener closes at once: a new connection is refused while the old request is still open.
    await expect
      .poll(
        async () =>
          fetch(`${service.base}/healthz`).then(
            () => 'answered',
            () => 'refused',
          ),
        { timeout: 10_000 },
      )
      .toBe('refused');
    request.finish();
    const answer = await request.answer;
    expect(answer).toMatch(/HTTP\/1\.1 200 OK/);
    expect(answer).toContain('"code":200');
    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(service.output()).toContain('"outcome":"clean"');
  });

  it('a request still unfinished after SHUTDOWN_TIMEOUT is cut off and the exit code is non-zero', async () => {
    const service = await start({ SHUTDOWN_TIMEOUT: '1' });
    const token = await loginAt(service.base, '000000', 'admin', PASSWORD);
    // The department written before shutdown (previous test) survived it.
    const list = await call(service.base, 'GET', '/system/dept-api/list?deptName=during', undefined, token);
    expect(list.body.data.map((d: { deptName: string }) => d.deptName)).toEqual(['Sent during shutdown']);
    const request = await halfSentPost(service.base, '/system/dept-api', token, { parentId: 0, deptName: 'Never finished' });
    service.child.kill('SIGTERM');
    const exit = await service.exited;
    expect(exit.code, service.output()).not.toBe(0);
    expect(exit.code).not.toBeNull();
    expect(service.output()).toContain('"outcome":"cut off"');
    request.socket.destroy();
  });
});

describe('admin recovery', () => {
  it('resets a password, revokes its sessions, clears its lockout; ADMIN_PASSWORD that no longer matches is warned about', async () => {
    let service = await start();
    const oldToken = await loginAt(service.base, '000000', 'admin', PASSWORD);
    // A tenant with its own admin, to reset by tenantId + username later.
    const tenant = await call(
      service.base,
      'POST',
      '/system/tenant-api',
      {
        tenantName: 'Recovery',
        companyName: `Recovery ${Date.now()}`,
        contactUserName: 'c',
        contactPhone: '1',
        username: 'boss',
        password: 'boss-password-1',
      },
      oldToken,
    );
    expect(tenant.status).toBe(200);
    const tenantRead = await call(service.base, 'GET', String(tenant.headers.get('location')), undefined, oldToken);
    const tenantId = tenantRead.body.data.tenantId as string;
    // Lock the platform admin out: five wrong passwords.
    for (let i = 0; i < 5; i++)
      await call(service.base, 'POST', '/auth/login', { tenantId: '000000', username: 'admin', password: 'wrong-password' });
    expect((await call(service.base, 'POST', '/auth/login', { tenantId: '000000', username: 'admin', password: PASSWORD })).status).toBe(429);

    if (db.kind === 'embedded') {
      // The command opens DATA_DIR itself, so it refuses while the service owns it.
      const refused = run('reset-password', { ...db.env, NEW_PASSWORD: 'new-admin-pw-1' });
      const exit = await refused.exited;
      expect(exit.code).not.toBe(0);
      expect(refused.output()).toContain('Stop the service first');
      await service.stop();
    }

    const reset = run('reset-password', { ...db.env, NEW_PASSWORD: 'new-admin-pw-1' });
    expect((await reset.exited).code).toBe(0);
    expect(reset.output()).toContain('Password of "admin" in tenant 000000 reset');
    expect(reset.output()).not.toContain('new-admin-pw-1');

    const bossReset = run('reset-password', db.env, ['--tenant', tenantId, '--user', 'boss']);
    expect((await bossReset.exited).code).toBe(0);
    const bossPassword = /New password: (\S+)/.exec(bossReset.output())?.[1];
    expect(bossPassword).toBeTruthy();

    if (db.kind === 'embedded') service = await start();
    // The old password in ADMIN_PASSWORD is warned about at start (PostgreSQL: on a second node).
    const second = db.kind === 'embedded' ? service : await start();
    await expect.poll(() => second.output(), { timeout: 15_000 }).toContain('ADMIN_PASSWORD does not match the existing platform admin');
    expect((await call(second.base, 'GET', '/auth/me', undefined, oldToken)).status).toBe(401);
    expect((await call(second.base, 'POST', '/auth/login', { tenantId: '000000', username: 'admin', password: PASSWORD })).status).toBe(401);
    await loginAt(second.base, '000000', 'admin', 'new-admin-pw-1');
    await loginAt(second.base, tenantId, 'boss', bossPassword!);
    expect((await call(second.base, 'POST', '/auth/login', { tenantId, username: 'boss', password: 'boss-password-1' })).status).toBe(401);
  });
});
