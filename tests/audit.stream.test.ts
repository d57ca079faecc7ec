import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { ADMIN_PASSWORD, buildTestApp, Client, createUserAndLogin, secondNode, type Node, type TestApp } from './support/app.js';
import { SseClient } from './support/sse.js';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';

// GET /system/audit-api/stream over real HTTP (docs/api-rules.md#audit-trail-and-change-feed): live events,
// resumption with Last-Event-ID, heartbeats, visibility, errors before the
// stream starts, a client that never reads, shutdown, and (PostgreSQL) a
// change on one node reaching a stream on another within 1 s.

const HEARTBEAT_MS = 300;
const STALL_MS = 2000;

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await buildTestApp({ audit: { stream: { heartbeatMs: HEARTBEAT_MS, stallMs: STALL_MS } } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
});
afterAll(async () => t?.close());

const STREAM = '/system/audit-api/stream';
const auth = (client: Client) => ({ authorization: `Bearer ${client.token}` });
const openStream = (client: Client, extra: Record<string, string> = {}, path = STREAM, at = base) =>
  SseClient.open(at, path, { ...auth(client), ...extra });

/** The newest record id, once everything written so far has a position. */
async function latestCursor(): Promise<string> {
  await t.root.get('/system/audit-api/changes?limit=1');
  const [row] = await t.sql<{ id: string }[]>`SELECT coalesce(max(position), 0)::text AS id FROM audit_log`;
  return row!.id;
}

const deptNamed = (name: string) => (e: { data: any }) => e.data.action === 'dept.create' && e.data.changes.deptName === name;

describe('the audit stream', () => {
  it('delivers new records live as `event: audit` with the cursor as id, and sends heartbeat comments', async () => {
    const stream = await openStream(t.root, {}, `${STREAM}?after=${await latestCursor()}`);
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
      expect(stream.headers['x-request-id']).toBeTruthy();
      expect((await t.root.post('/system/dept-api', { parentId: 0, deptName: 'Live one' })).status).toBe(200);
      await stream.until(() => stream.events.some(deptNamed('Live one')), 5000, 'the live event');
      const event = stream.events.find(deptNamed('Live one'))!;
      expect(event.event).toBe('audit');
      expect(event.id).toBe(event.data.id);
      expect(event.data).toMatchObject({ tenantId: '000000', userName: 'admin', entityType: 'dept' });
      await stream.until(() => stream.comments.includes('keep-alive'), HEARTBEAT_MS * 10, 'a heartbeat comment');
    } finally {
      stream.close();
    }
  });

  it('resumes after Last-Event-ID (or ?after=) with nothing missed and nothing repeated', async () => {
    const start = await latestCursor();
    for (const name of ['R1', 'R2']) expect((await t.root.post('/system/dept-api', { parentId: 0, deptName: name })).status).toBe(200);
    const first = await openStream(t.root, { 'last-event-id': start });
    await first.until(() => first.events.some(deptNamed('R2')), 5000, 'R1 and R2');
    first.close();
    const lastSeen = first.events.at(-1)!.id;

    for (const name of ['R3', 'R4', 'R5']) expect((await t.root.post('/system/dept-api', { parentId: 0, deptName: name })).status).toBe(200);
    const second = await openStream(t.root, { 'last-event-id': lastSeen });
    const third = await openStream(t.root, {}, `${STREAM}?after=${lastSeen}`);
    try {
      await second.until(() => second.events.some(deptNamed('R5')), 5000, 'R3 to R5');
      await third.until(() => third.events.some(deptNamed('R5')), 5000, 'R3 to R5 with ?after=');
      const expected = (await t.root.get(`/system/audit-api/changes?after=${start}&limit=1000`)).body.data.events.map((e: { id: string }) => e.id);
      const got = [...first.events, ...second.events].map((e) => e.id);
      expect(got.slice(0, expected.length)).toEqual(expected.slice(0, got.length));
      expect(new Set(got).size).toBe(got.length);
      expect(got).toEqual(expected.slice(0, got.length));
      expect(third.events.map((e) => e.id)).toEqual(second.events.map((e) => e.id));
    } finally {
      second.close();
      third.close();
    }
  });

  it("shows a tenant admin only its own tenant's records", async () => {
    const tenant = await createTenantWithAdmin(t);
    const stream = await openStream(tenant.admin, {}, `${STREAM}?after=${await latestCursor()}`);
    try {
      expect((await t.root.post('/system/dept-api', { parentId: 0, deptName: 'Platform only' })).status).toBe(200);
      expect((await tenant.admin.post('/system/dept-api', { parentId: 0, deptName: 'Tenant own' })).status).toBe(200);
      await stream.until(() => stream.events.some(deptNamed('Tenant own')), 5000, "the tenant's event");
      expect(stream.events.every((e) => e.data.tenantId === tenant.tenantId)).toBe(true);
    } finally {
      stream.close();
    }
  });

  it('answers envelopes before the stream starts: 401 without a token, 403 for a user, 400 for a bad cursor', async () => {
    const anon = await SseClient.open(base, STREAM, {});
    await anon.until(() => anon.ended, 5000, 'the end of the 401');
    expect(anon.status).toBe(401);
    expect(JSON.parse(anon.body)).toMatchObject({ code: 401, data: null });

    const tenant = await createTenantWithAdmin(t);
    const user = await createUserAndLogin(t, tenant.admin, tenant.tenantId, 'user');
    const forbidden = await openStream(user.client);
    await forbidden.until(() => forbidden.ended, 5000, 'the end of the 403');
    expect(forbidden.status).toBe(403);

    for (const [headers, path] of [
      [{ 'last-event-id': 'abc' }, STREAM],
      [{}, `${STREAM}?after=x`],
    ] as const) {
      const bad = await openStream(t.root, headers, path);
      await bad.until(() => bad.ended, 5000, 'the end of the 400');
      expect(bad.status).toBe(400);
      expect(JSON.parse(bad.body)).toMatchObject({ code: 400, data: null });
    }
  });

  it('forgets clients that disconnect, and ends a stream whose session is logged out', async () => {
    const before = t.app.auditStreams.size;
    const streams = await Promise.all(Array.from({ length: 5 }, () => openStream(t.root)));
    expect(t.app.auditStreams.size).toBe(before + 5);
    for (const s of streams) s.close();
    await expect.poll(() => t.app.auditStreams.size, { timeout: 5000, interval: 20 }).toBe(before);

    const session = await t.login('000000', 'admin', ADMIN_PASSWORD);
    const stream = await openStream(session);
    expect(stream.status).toBe(200);
    expect((await session.post('/auth/logout')).status).toBe(200);
    await stream.until(() => stream.ended, HEARTBEAT_MS * 10, 'the stream of a logged-out session to end');
    expect(t.app.auditStreams.size).toBe(before);
  });

  it('ends a stream opened with an API key once the key is revoked', async () => {
    const before = t.app.auditStreams.size;
    const created = await t.root.post('/system/apikey-api', { name: `stream-${Date.now()}`, role: 'admin' });
    expect(created.status).toBe(200);
    const stream = await openStream(new Client(t.app, created.body.data.key));
    expect(stream.status).toBe(200);
    // Live through several heartbeats, each of which checks the key again.
    await new Promise((r) => setTimeout(r, HEARTBEAT_MS * 3));
    expect(stream.ended).toBe(false);
    expect((await t.root.delete(`/system/apikey-api/${created.body.data.id}`)).status).toBe(200);
    await stream.until(() => stream.ended, HEARTBEAT_MS * 10, 'the stream of a revoked API key to end');
    expect(t.app.auditStreams.size).toBe(before);
  });

  it('cuts off a client that stops reading, while a client that reads gets everything', async () => {
    const id = (
      await t.root.post('/system/tenant-api', {
        tenantName: 'Big',
        companyName: `Big ${Math.random()}`,
        contactUserName: 'C',
        contactPhone: '1',
      })
    ).headers
      .location!.toString()
      .split('/')
      .pop()!;
    const body = (await t.root.get(`/system/tenant-api/${id}`)).body.data;
    const after = await latestCursor();
    const before = t.app.auditStreams.size;

    const reading = await openStream(t.root, {}, `${STREAM}?after=${after}`);
    // A raw connection that sends its request and then never reads.
    const socket = connect((t.app.server.address() as { port: number }).port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.pause();
    socket.write(`GET ${STREAM}?after=${after} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${t.root.token}\r\n\r\n`);
    await expect.poll(() => t.app.auditStreams.size, { timeout: 10_000, interval: 20 }).toBe(before + 2);

    // Each update records two lists of 10,000 menu ids (about 140 KB): the socket buffers fill up, the stall timer runs out.
    let updates = 0;
    try {
      const cutOff = Date.now() + 30_000;
      while (t.app.auditStreams.size > before + 1 && Date.now() < cutOff) {
        if (updates < 100) {
          const ids = Array.from({ length: 10_000 }, (_, i) => 100_000 + i + (updates % 2) * 10_000).join(',');
          expect((await t.root.put('/system/tenant-api', { ...body, packageBo: { menuIds: ids } })).status).toBe(200);
          updates++;
        } else await new Promise((r) => setTimeout(r, 100));
      }
      expect(t.app.auditStreams.size).toBe(before + 1);
      expect(reading.ended).toBe(false);
      const expected = (await t.root.get(`/system/audit-api/changes?after=${after}&limit=1000`)).body.data.events.map((e: { id: string }) => e.id);
      expect(expected.length).toBeGreaterThanOrEqual(updates);
      await reading.until(() => reading.events.length >= expected.length, 10_000, 'every event on the reading stream');
      expect(reading.events.map((e) => e.id)).toEqual(expected);
    } finally {
      socket.destroy();
      reading.close();
    }
  });

  it('is ended when the app closes, so shutdown is not held up by followers', async () => {
    const app = await buildApp({ sql: t.appSql, config: { jwtSecret: undefined, tokenTtl: 7200, logLevel: 'silent' }, logger: false });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const at = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const login = await new Client(app).post('/auth/login', { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD });
    const stream = await openStream(new Client(app, login.body.data.access_token), {}, STREAM, at);
    expect(stream.status).toBe(200);
    const closing = Date.now();
    await app.close();
    await stream.until(() => stream.ended, 5000, 'the stream to end');
    expect(Date.now() - closing).toBeLessThan(5000);
    expect(app.auditStreams.size).toBe(0);
  });
});

describe('across nodes (PostgreSQL)', () => {
  it('a change on one node reaches a stream on another node within 1 s, both ways', async (ctx) => {
    if (t.kind === 'pglite') ctx.skip(); // one process owns the embedded database: no second node
    let node: Node | undefined;
    try {
      node = await secondNode(t);
      const second = node.app;
      await second.listen({ port: 0, host: '127.0.0.1' });
      const at = `http://127.0.0.1:${(second.server.address() as { port: number }).port}`;
      const login = await new Client(second).post('/auth/login', { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD });
      const root2 = new Client(second, login.body.data.access_token);

      for (const [writer, reader, label] of [
        [t.root, root2, 'node 1 to node 2'],
        [root2, t.root, 'node 2 to node 1'],
      ] as const) {
        const stream = await SseClient.open(reader === root2 ? at : base, `${STREAM}?after=${await latestCursor()}`, auth(reader));
        try {
          expect(stream.status).toBe(200);
          await stream.until(() => stream.comments.includes('connected'), 2000, 'the stream to open');
          for (let i = 0; i < 3; i++) {
            const name = `Cross ${label} ${i}`;
            const res = await writer.post('/system/dept-api', { parentId: 0, deptName: name });
            expect(res.status).toBe(200);
            const written = performance.now();
            await stream.until(() => stream.events.some(deptNamed(name)), 1000, `${name} within 1 s`);
            expect(stream.events.find(deptNamed(name))!.at - written).toBeLessThan(1000);
          }
        } finally {
          stream.close();
        }
      }
    } finally {
      await node?.close();
    }
  });
});
