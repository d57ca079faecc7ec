import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { buildTestApp, createUserAndLogin, type Client, type TestApp } from './support/app.js';
import { createTenantWithAdmin, readTenant, writable } from './support/tenant-fixtures.js';
import { WebhookReceiver, type Received } from './support/webhook-receiver.js';
import { parseAllowedCidrs } from '../src/outbound/outbound.address.js';
import { transaction } from '../src/db/retry.js';
import { createEndpoint, updateEndpoint } from '../src/webhooks/webhook.sql.js';

// Webhooks through HTTP against a real loopback receiver (docs/webhooks.md):
// the endpoints API, Standard Webhooks signatures checked by an independent
// implementation on the exact bytes received, filters and tenant scope,
// order and head-of-line blocking under failures, retries with one
// webhook-id, 410, exhaustion, redirects, timeouts, replay, rotation, the
// attempt log and the metrics. Delivery across nodes and through kill -9:
// tests/webhooks.nodes.test.ts; the address rule and cursor expiry:
// tests/webhooks.address.test.ts.

const API = '/system/webhook-api';
const SCHEDULE = [0.2, 0.2, 0.2];
const TIMEOUT_MS = 1000;
const WEBHOOKS = {
  allowed: parseAllowedCidrs('127.0.0.0/8,::1/128'),
  timeoutMs: TIMEOUT_MS,
  retrySchedule: SCHEDULE,
  pollMs: 100,
  maintenanceMs: 500,
};

let t: TestApp;
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  t = await buildTestApp({ webhooks: WEBHOOKS });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

let paths = 0;
/** An endpoint of `as`'s tenant to a path of its own on the receiver. */
async function hook(as: Client, body: Record<string, unknown> = {}) {
  const path = `/hook-${++paths}`;
  const res = await as.post(API, { url: receiver.url(path), events: ['dept.*'], ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { id: res.body.data.id as number, secret: res.body.data.secret as string, path, data: res.body.data };
}
const at = (path: string) => receiver.received.filter((r) => r.path === path);
const bodies = (path: string) => at(path).map((r) => JSON.parse(r.raw.toString('utf8')));
const named = (path: string, name: string) => bodies(path).filter((b) => b.data.changes?.deptName === name);
const dept = async (as: Client, deptName: string) => {
  const res = await as.post('/system/dept-api', { parentId: 0, deptName });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return Number(String(res.headers.location).split('/').pop());
};
const idOf = (r: Received) => Number(String(r.headers['webhook-id']).replace('audit_', ''));
const headersOf = (r: Received) => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});
const auditOf = async (action: string, entityId: number) =>
  (await t.root.get(`/system/audit-api/list?action=${action}&entityId=${entityId}`)).body.data.rows as any[];

describe('endpoints', () => {
  it('create answers the secret once; get, list, replace and delete; the secret is never read back', async () => {
    const made = await hook(t.root, { description: 'HR sync', events: ['dept.*', 'user.create'] });
    expect(made.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(made.secret.slice(6), 'base64')).toHaveLength(32);
    expect(made.data).toMatchObject({
      url: receiver.url(made.path),
      events: ['dept.*', 'user.create'],
      description: 'HR sync',
      status: '0',
      failures: 0,
    });
    const got = await t.root.get(`${API}/${made.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).not.toHaveProperty('secret');
    expect(JSON.stringify(got.body)).not.toContain(made.secret.slice(6));
    const list = await t.root.get(`${API}/list?pageNum=1&pageSize=1000`);
    expect(list.body.data.total).toBeGreaterThanOrEqual(1);
    expect(list.body.data.rows.map((r: any) => r.id)).toContain(made.id);
    expect(JSON.stringify(list.body)).not.toContain(made.secret.slice(6));

    const put = await t.root.put(API, { id: made.id, url: receiver.url('/elsewhere'), events: [], description: '', status: '1' });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect((await t.root.get(`${API}/${made.id}`)).body.data).toMatchObject({ url: receiver.url('/elsewhere'), events: [], status: '1' });
    const [update] = await auditOf('webhook.update', made.id);
    expect(update.changes.status).toEqual({ before: '0', after: '1' });
    expect(JSON.stringify(await auditOf('webhook.create', made.id))).not.toContain(made.secret.slice(6));

    expect((await t.root.delete(`${API}/${made.id}`)).status).toBe(200);
    expect((await t.root.get(`${API}/${made.id}`)).status).toBe(404);
    expect((await t.root.delete(`${API}/${made.id}`)).status).toBe(404);
    expect(await auditOf('webhook.delete', made.id)).toHaveLength(1);
  });

  it('refuses bad input with 400 envelopes, and a user-role caller with 403', async () => {
    for (const body of [
      { url: 'ftp://127.0.0.1/x' },
      { url: 'not a url' },
      { url: 'http://127.0.0.1:1/x#frag' },
      { url: 'http://user:secret@127.0.0.1:1/x' },
      { url: receiver.url(), events: ['dept'] },
      { url: receiver.url(), events: ['dept.*', 'dept.*'] },
      { url: receiver.url(), description: 'x'.repeat(501) },
      {},
    ]) {
      const res = await t.root.post(API, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe(400);
      expect(res.body.msg).toBeTruthy();
    }
    const made = await hook(t.root);
    expect((await t.root.post(`${API}/${made.id}/replay`, { after: 'x' })).status).toBe(400);
    expect((await t.root.get(`${API}/abc`)).status).toBe(400);
    expect((await t.root.get(`${API}/99999999`)).status).toBe(404);
    expect((await t.root.put(API, { id: 99999999, url: receiver.url(), events: [], description: '', status: '0' })).status).toBe(404);

    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    for (const [method, url] of [
      ['GET', `${API}/list`],
      ['GET', `${API}/${made.id}`],
      ['POST', API],
      ['DELETE', `${API}/${made.id}`],
      ['POST', `${API}/${made.id}/test`],
    ] as const) {
      const res = await user.client.request(method, url, method === 'POST' ? { url: receiver.url() } : undefined);
      expect(res.status, `${method} ${url}`).toBe(403);
    }
    expect((await t.anon.get(`${API}/list`)).status).toBe(401);
  });

  it('holds the url rule in the write functions themselves: a direct create or update with a refused url writes nothing', async () => {
    const actor = { tenantId: '000000', userName: 'admin', requestId: 'direct-call', ip: '127.0.0.1' };
    const rule = { allowed: WEBHOOKS.allowed };
    const made = await hook(t.root);
    const refused = ['ftp://127.0.0.1/x', 'http://user:secret@127.0.0.1:1/x', 'https://10.0.0.1/x'];
    for (const url of refused) {
      await expect(
        transaction(t.appSql, (tx) => createEndpoint(tx, actor, { url }, rule, 'whsec_unused')),
        url,
      ).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/^url /) });
      const update = { id: made.id, url, events: [], description: '', status: '0' as const };
      await expect(
        transaction(t.appSql, (tx) => updateEndpoint(tx, actor, update, rule)),
        url,
      ).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/^url /) });
    }
    expect(await t.sql`SELECT 1 FROM webhook_endpoint WHERE tenant_id = '000000' AND url = ANY(${refused}::text[])`).toHaveLength(0);
    expect((await t.root.get(`${API}/${made.id}`)).body.data.url).toBe(made.data.url);
  });

  it("an admin sees and changes only its own tenant's endpoints", async () => {
    const other = await createTenantWithAdmin(t);
    const mine = await hook(t.root);
    expect((await other.admin.get(`${API}/${mine.id}`)).status).toBe(404);
    expect((await other.admin.delete(`${API}/${mine.id}`)).status).toBe(404);
    expect((await other.admin.post(`${API}/${mine.id}/rotate-secret`)).status).toBe(404);
    expect((await other.admin.get(`${API}/list`)).body.data.rows.map((r: any) => r.id)).not.toContain(mine.id);
    expect((await t.root.get(`${API}/${mine.id}`)).status).toBe(200);
  });
});

describe('delivery', () => {
  it('POSTs each change signed (verified by the standardwebhooks library on the exact bytes), with the record as data', async () => {
    const h = await hook(t.root);
    const deptId = await dept(t.root, 'Signed one');
    await expect.poll(() => named(h.path, 'Signed one').length, { timeout: 30_000 }).toBe(1);
    const r = at(h.path).find((x) => JSON.parse(x.raw.toString()).data.changes.deptName === 'Signed one')!;
    expect(r.headers['content-type']).toBe('application/json');
    const verified = new Webhook(h.secret).verify(r.raw, headersOf(r)) as any;
    expect(verified.type).toBe('dept.create');
    // A single flipped byte fails verification: the signature covers these bytes.
    const tampered = Buffer.from(r.raw);
    tampered[tampered.length - 2] = tampered[tampered.length - 2]! ^ 1;
    expect(() => new Webhook(h.secret).verify(tampered, headersOf(r))).toThrow();
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(r.raw, headersOf(r))).toThrow();

    const [record] = await auditOf('dept.create', deptId);
    expect(r.headers['webhook-id']).toBe(`audit_${record.id}`);
    const body = JSON.parse(r.raw.toString('utf8'));
    expect(body.type).toBe('dept.create');
    expect(new Date(body.timestamp).toISOString()).toBe(body.timestamp);
    expect(body.data).toEqual(record);
    expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
  });

  it('two apps of one process on two databases each send their own record under the same record id', async () => {
    // Each copy of the template numbers its records alike, so the two departments' records share an id: an
    // event made for one database must never go out for the other (the bodies are kept per worker).
    const apps = [] as TestApp[];
    try {
      const sent = [];
      for (const name of ['Same id one', 'Same id two']) {
        const app = await buildTestApp({ webhooks: WEBHOOKS });
        apps.push(app);
        const h = await hook(app.root);
        await dept(app.root, name);
        await expect.poll(() => at(h.path).length, { timeout: 30_000 }).toBeGreaterThanOrEqual(1);
        sent.push(at(h.path).find((r) => JSON.parse(r.raw.toString()).type === 'dept.create')!);
      }
      expect(idOf(sent[0]!)).toBe(idOf(sent[1]!));
      expect(sent.map((r) => JSON.parse(r.raw.toString()).data.changes.deptName)).toEqual(['Same id one', 'Same id two']);
    } finally {
      for (const app of apps) await app.close();
    }
  });

  it('filters by action names and prefixes; an empty filter takes every action', async () => {
    const moves = await hook(t.root, { events: ['dept.move'] });
    const users = await hook(t.root, { events: ['user.*'] });
    const all = await hook(t.root, { events: [] });
    const a = await dept(t.root, 'Filter parent');
    const b = await dept(t.root, 'Filter child');
    const current = (await t.root.get(`/system/dept-api/${b}`)).body.data;
    expect((await t.root.put('/system/dept-api', { ...current, parentId: a })).status).toBe(200);
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    await expect
      .poll(() => bodies(all.path).some((e) => e.type === 'auth.login' && e.data.userName === user.userName), { timeout: 30_000 })
      .toBe(true);
    await expect.poll(() => bodies(moves.path).length, { timeout: 30_000 }).toBeGreaterThan(0);
    await expect.poll(() => bodies(users.path).some((e) => e.data.entityId === String(user.userId)), { timeout: 30_000 }).toBe(true);
    expect(new Set(bodies(moves.path).map((e) => e.type))).toEqual(new Set(['dept.move']));
    expect(bodies(moves.path).some((e) => e.data.entityId === String(b))).toBe(true);
    expect(bodies(users.path).every((e) => e.type.startsWith('user.'))).toBe(true);
    expect(bodies(all.path).some((e) => e.type === 'dept.create' && e.data.changes.deptName === 'Filter parent')).toBe(true);
    expect(bodies(all.path).some((e) => e.type === 'dept.move')).toBe(true);
  });

  it("a tenant's endpoint receives its own and its descendants' changes, never its parent's or a sibling's", async () => {
    const child = await createTenantWithAdmin(t);
    const sibling = await createTenantWithAdmin(t);
    const childHook = await hook(child.admin);
    const rootHook = await hook(t.root);
    // A grandchild, made by the child tenant's admin.
    const { tenantId: grandchildId, admin: grandchild } = await createTenantWithAdmin(t, child.admin, { tenantName: 'Grandchild' });
    await dept(t.root, 'Scope root');
    await dept(child.admin, 'Scope child');
    await dept(sibling.admin, 'Scope sibling');
    await dept(grandchild, 'Scope grandchild');
    await expect
      .poll(() => named(rootHook.path, 'Scope grandchild').length + named(rootHook.path, 'Scope sibling').length, { timeout: 30_000 })
      .toBe(2);
    await expect.poll(() => named(childHook.path, 'Scope grandchild').length, { timeout: 30_000 }).toBe(1);
    expect(named(childHook.path, 'Scope child')).toHaveLength(1);
    expect(named(childHook.path, 'Scope root')).toHaveLength(0);
    expect(named(childHook.path, 'Scope sibling')).toHaveLength(0);
    expect(bodies(childHook.path).every((e) => e.data.tenantId === child.tenantId || e.data.tenantId === grandchildId)).toBe(true);
    expect(named(rootHook.path, 'Scope root')).toHaveLength(1);
  });

  it("pauses a disabled tenant's endpoints, and resumes them from the cursor when it is enabled again", async () => {
    const child = await createTenantWithAdmin(t);
    const h = await hook(child.admin, { events: ['tenant.*'] });
    const put = (status: '0' | '1') => t.root.put('/system/tenant-api', { ...writable(child.tenant), status });
    expect((await put('1')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 800));
    expect(at(h.path)).toHaveLength(0);
    expect((await put('0')).status).toBe(200);
    await expect.poll(() => bodies(h.path).length, { timeout: 30_000 }).toBe(2);
    expect(
      bodies(h.path).map((e) => [e.type, e.data.changes.status?.after]),
      JSON.stringify(bodies(h.path)),
    ).toEqual([
      ['tenant.update', '1'],
      ['tenant.update', '0'],
    ]);
    expect((await readTenant(t.root, child.tenant.id)).status).toBe('0');
  });

  it('keeps feed order under failures: the failing event is retried with the same webhook-id and nothing overtakes it', async () => {
    const h = await hook(t.root);
    let failuresLeft = 2;
    const previous = receiver.answer;
    receiver.answer = (r) => {
      if (r.path === h.path && JSON.parse(r.raw.toString()).data.changes.deptName === 'Order 2' && failuresLeft > 0) {
        failuresLeft--;
        return { status: 500, body: 'not now' };
      }
      return previous(r);
    };
    try {
      for (let i = 1; i <= 5; i++) await dept(t.root, `Order ${i}`);
      await expect.poll(() => bodies(h.path).filter((e) => /^Order \d$/.test(e.data.changes.deptName)).length, { timeout: 15_000 }).toBe(7);
    } finally {
      receiver.answer = previous;
    }
    const seen = at(h.path).filter((r) => /^Order \d$/.test(JSON.parse(r.raw.toString()).data.changes.deptName));
    const names = seen.map((r) => JSON.parse(r.raw.toString()).data.changes.deptName);
    expect(names).toEqual(['Order 1', 'Order 2', 'Order 2', 'Order 2', 'Order 3', 'Order 4', 'Order 5']);
    const ids = seen.map(idOf);
    expect(ids[1]).toBe(ids[2]);
    expect(ids[2]).toBe(ids[3]);
    expect(new Set(seen.slice(1, 4).map((r) => r.headers['webhook-id'])).size).toBe(1);
    // The retry came after its step (0.2 s ± 20%), not at once.
    expect(seen[2]!.at - seen[1]!.answeredAt!).toBeGreaterThanOrEqual(100);
    const distinct = [...new Set(ids)];
    expect(distinct).toEqual([...distinct].sort((a, b) => a - b));

    const log = (await t.root.get(`${API}/${h.id}/deliveries?pageSize=100`)).body.data;
    const forSecond = log.rows.filter((d: any) => d.eventId === seen[1]!.headers['webhook-id']);
    expect(forSecond.map((d: any) => [d.attempt, d.statusCode]).sort()).toEqual([
      [1, 500],
      [2, 500],
      [3, 204],
    ]);
    expect(forSecond.find((d: any) => d.attempt === 1).response).toBe('not now');
    expect((await t.root.get(`${API}/${h.id}`)).body.data).toMatchObject({ failures: 0, status: '0' });
  });

  it('disables an endpoint when its retries are spent, with a webhook.disabled audit record; enabling resumes from the cursor', async () => {
    const h = await hook(t.root);
    const previous = receiver.answer;
    let failing = true;
    receiver.answer = (r) => (r.path === h.path && failing ? { status: 503 } : previous(r));
    try {
      await dept(t.root, 'Exhausted');
      await expect.poll(async () => (await t.root.get(`${API}/${h.id}`)).body.data.status, { timeout: 15_000 }).toBe('1');
      const endpoint = (await t.root.get(`${API}/${h.id}`)).body.data;
      expect(endpoint.disabledReason).toBe('retries exhausted');
      expect(at(h.path)).toHaveLength(SCHEDULE.length + 1);
      expect(new Set(at(h.path).map((r) => r.headers['webhook-id'])).size).toBe(1);
      const [disabled] = await auditOf('webhook.disabled', h.id);
      expect(disabled).toMatchObject({ tenantId: '000000', userName: 'system', entityType: 'webhook' });
      expect(disabled.changes.reason).toBe('retries exhausted');

      // Nothing is sent while disabled; enabling sends the blocked event and what came after.
      await dept(t.root, 'While disabled');
      await new Promise((r) => setTimeout(r, 700));
      expect(at(h.path)).toHaveLength(SCHEDULE.length + 1);
      failing = false;
      const put = await t.root.put(API, { id: h.id, url: endpoint.url, events: endpoint.events, description: '', status: '0' });
      expect(put.status).toBe(200);
      await expect.poll(() => named(h.path, 'While disabled').length, { timeout: 30_000 }).toBe(1);
      expect(named(h.path, 'Exhausted').length).toBe(SCHEDULE.length + 2);
      expect((await t.root.get(`${API}/${h.id}`)).body.data).toMatchObject({ status: '0', disabledReason: null, failures: 0 });
    } finally {
      receiver.answer = previous;
    }
  });

  it('honours Retry-After only up to the next step of the schedule', async () => {
    const h = await hook(t.root);
    let failuresLeft = 1;
    const previous = receiver.answer;
    receiver.answer = (r) => (r.path === h.path && failuresLeft-- > 0 ? { status: 503, headers: { 'retry-after': '3600' } } : previous(r));
    try {
      await dept(t.root, 'Retry after');
      await expect.poll(() => at(h.path).length, { timeout: 30_000 }).toBe(2);
      // An hour was asked for; the step is 0.2 s.
      expect(at(h.path)[1]!.at - at(h.path)[0]!.answeredAt!).toBeLessThan(3000);
      expect(at(h.path)[1]!.headers['webhook-id']).toBe(at(h.path)[0]!.headers['webhook-id']);
    } finally {
      receiver.answer = previous;
    }
  });

  it('keeps an answer with a NUL byte (a binary body) in the log, and moves on', async () => {
    const h = await hook(t.root);
    const previous = receiver.answer;
    receiver.answer = (r) => (r.path === h.path ? { status: 200, body: 'bin\u0000ary' } : previous(r));
    try {
      await dept(t.root, 'Binary answer 1');
      await dept(t.root, 'Binary answer 2');
      await expect.poll(() => named(h.path, 'Binary answer 2').length, { timeout: 30_000 }).toBe(1);
      expect(named(h.path, 'Binary answer 1')).toHaveLength(1);
      // The attempt is logged behind the delivery (with the cursor's move), a moment after the receiver answered.
      const newest = async () => (await t.root.get(`${API}/${h.id}/deliveries`)).body.data.rows[0];
      await expect
        .poll(newest, { timeout: 5_000 })
        .toMatchObject({ statusCode: 200, response: 'bin\uFFFDary', eventId: `audit_${named(h.path, 'Binary answer 2')[0]!.data.id}` });
      const tested = await t.root.post(`${API}/${h.id}/test`);
      expect(tested.body.data).toMatchObject({ status: 200, body: 'bin\uFFFDary' });
    } finally {
      receiver.answer = previous;
    }
  });

  it('a 410 disables the endpoint at once', async () => {
    const h = await hook(t.root);
    const previous = receiver.answer;
    receiver.answer = (r) => (r.path === h.path ? { status: 410, body: 'gone for good' } : previous(r));
    try {
      await dept(t.root, 'Gone');
      await expect.poll(async () => (await t.root.get(`${API}/${h.id}`)).body.data.status, { timeout: 30_000 }).toBe('1');
      await new Promise((r) => setTimeout(r, 600));
      expect(at(h.path)).toHaveLength(1);
      expect((await t.root.get(`${API}/${h.id}`)).body.data.disabledReason).toBe('410 Gone');
      expect((await auditOf('webhook.disabled', h.id))[0].changes.reason).toBe('410 Gone');
    } finally {
      receiver.answer = previous;
    }
  });

  it('does not follow redirects, and cuts off a receiver slower than the timeout', async () => {
    const redirected = await hook(t.root, { events: ['dept.create'] });
    const slow = await hook(t.root, { events: ['dept.create'] });
    const previous = receiver.answer;
    receiver.answer = (r) =>
      r.path === redirected.path
        ? { status: 307, headers: { location: receiver.url('/redirect-target') } }
        : r.path === slow.path
          ? { status: 204, delayMs: TIMEOUT_MS + 1500 }
          : previous(r);
    try {
      await dept(t.root, 'Redirect or slow');
      await expect.poll(() => at(redirected.path).length + at(slow.path).length, { timeout: 30_000 }).toBeGreaterThanOrEqual(4);
      expect(receiver.received.filter((r) => r.path === '/redirect-target')).toHaveLength(0);
      const redirectLog = (await t.root.get(`${API}/${redirected.id}/deliveries`)).body.data.rows;
      expect(redirectLog[0].statusCode).toBe(307);
      expect(redirectLog[0].error).toMatch(/redirect not followed/);
      await expect.poll(async () => (await t.root.get(`${API}/${slow.id}/deliveries`)).body.data.rows.length, { timeout: 30_000 }).toBeGreaterThan(0);
      const slowLog = (await t.root.get(`${API}/${slow.id}/deliveries`)).body.data.rows;
      expect(slowLog.at(-1).statusCode).toBeNull();
      expect(slowLog.at(-1).error).toMatch(/timed out/);
      expect(slowLog.at(-1).ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      expect(slowLog.at(-1).ms).toBeLessThan(TIMEOUT_MS + 1000);
    } finally {
      receiver.answer = previous;
      for (const h of [redirected, slow]) await t.root.delete(`${API}/${h.id}`);
    }
  });
});

describe('test, replay, rotation, log', () => {
  it('POST /{id}/test sends a webhook.test event now and answers what the receiver said', async () => {
    const h = await hook(t.root);
    const previous = receiver.answer;
    receiver.answer = (r) => (r.path === h.path ? { status: 202, body: 'x'.repeat(3000) } : previous(r));
    try {
      const res = await t.root.post(`${API}/${h.id}/test`);
      expect(res.status).toBe(200);
      expect(res.body.data.status).toBe(202);
      expect(res.body.data.body).toBe('x'.repeat(1024));
      expect(res.body.data.ms).toBeGreaterThanOrEqual(0);
      const r = at(h.path).at(-1)!;
      const event = new Webhook(h.secret).verify(r.raw, headersOf(r)) as any;
      expect(event.type).toBe('webhook.test');
      const log = (await t.root.get(`${API}/${h.id}/deliveries`)).body.data;
      expect(log.rows[0]).toMatchObject({ eventId: r.headers['webhook-id'], statusCode: 202, attempt: 1 });
      expect(log.rows[0].response).toHaveLength(1024);
    } finally {
      receiver.answer = previous;
    }
    // Nobody listening: no status, the reason as body.
    const closed = await t.root.put(API, { id: h.id, url: 'http://127.0.0.1:1/nobody', events: ['dept.*'], description: '', status: '1' });
    expect(closed.status).toBe(200);
    const res = await t.root.post(`${API}/${h.id}/test`);
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBeNull();
    expect(res.body.data.body).toMatch(/ECONNREFUSED/);
  });

  it('replay moves the cursor back and sends the later events again with the same ids; never forward', async () => {
    const h = await hook(t.root);
    await dept(t.root, 'Replay 1');
    await dept(t.root, 'Replay 2');
    await expect.poll(() => named(h.path, 'Replay 2').length, { timeout: 30_000 }).toBe(1);
    const first = at(h.path).find((r) => JSON.parse(r.raw.toString()).data.changes.deptName === 'Replay 1')!;
    // The cursor moves once the answer is recorded, just after the receiver has it.
    const second = at(h.path).find((r) => JSON.parse(r.raw.toString()).data.changes.deptName === 'Replay 2')!;
    await expect
      .poll(async () => BigInt((await t.root.get(`${API}/${h.id}`)).body.data.cursor) >= BigInt(idOf(second)), { timeout: 30_000 })
      .toBe(true);
    const cursor = (await t.root.get(`${API}/${h.id}`)).body.data.cursor;
    expect((await t.root.post(`${API}/${h.id}/replay`, { after: String(BigInt(cursor) + 1n) })).status).toBe(400);
    const after = String(idOf(first) - 1);
    const replay = await t.root.post(`${API}/${h.id}/replay`, { after });
    expect(replay.status, JSON.stringify(replay.body)).toBe(200);
    await expect.poll(() => named(h.path, 'Replay 2').length, { timeout: 30_000 }).toBe(2);
    expect(named(h.path, 'Replay 1')).toHaveLength(2);
    const ids = at(h.path).filter((r) => r.headers['webhook-id'] === first.headers['webhook-id']);
    expect(ids).toHaveLength(2);
    expect(ids[1]!.raw.toString()).toBe(ids[0]!.raw.toString());
  });

  it('rotate-secret answers a new secret; deliveries carry both signatures for the overlap, each verifying', async () => {
    const h = await hook(t.root);
    const rotated = await t.root.post(`${API}/${h.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const secret = rotated.body.data.secret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(h.secret);
    const until = new Date(rotated.body.data.previousSecretUntil.replace(' ', 'T'));
    expect(Math.abs(until.getTime() - Date.now() - 24 * 3600_000)).toBeLessThan(120_000);
    await dept(t.root, 'Rotated');
    await expect.poll(() => named(h.path, 'Rotated').length, { timeout: 30_000 }).toBe(1);
    const r = at(h.path).at(-1)!;
    expect(String(r.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(() => new Webhook(secret).verify(r.raw, headersOf(r))).not.toThrow();
    expect(() => new Webhook(h.secret).verify(r.raw, headersOf(r))).not.toThrow();
    const newOnly = { ...headersOf(r), 'webhook-signature': String(r.headers['webhook-signature']).split(' ')[0]! };
    expect(() => new Webhook(secret).verify(r.raw, newOnly)).not.toThrow();
    expect(() => new Webhook(h.secret).verify(r.raw, newOnly)).toThrow();
  });

  it("the metrics show each endpoint's backlog, lag and failures", async () => {
    const h = await hook(t.root);
    const previous = receiver.answer;
    // The first attempt fails at once; the retries are held past the timeout, so the endpoint stays failing (not yet disabled) for seconds.
    receiver.answer = (r) => (r.path === h.path ? (at(h.path).length === 1 ? { status: 500 } : { status: 204, delayMs: 5000 }) : previous(r));
    try {
      const made = await dept(t.root, 'Metric 1');
      // When its record was written, to the microsecond (the API shows seconds).
      const [row] = await t.sql<{ written: number }[]>`
        SELECT extract(epoch FROM time)::float8 * 1000 AS written FROM audit_log
        WHERE tenant_id = '000000' AND action = 'dept.create' AND entity_id = ${String(made)}`;
      const written = row!.written;
      // A scrape reads what the database holds now: watched, not read once, since the failure is recorded after the answer.
      // Every figure is taken from one scrape that answered (a scrape whose read missed its second has no endpoint lines).
      const gauge = (scrape: string, name: string) =>
        Number(new RegExp(`^webhook_endpoint_${name}\\{tenant_id="000000",endpoint="${h.id}"\\} (\\S+)$`, 'm').exec(scrape)?.[1]);
      const scrape = async () => {
        const from = Date.now();
        const text = await t.app.metrics.metrics();
        return { text, from, to: Date.now() };
      };
      const failing = await vi.waitFor(
        async () => {
          const s = await scrape();
          expect(gauge(s.text, 'failures')).toBeGreaterThanOrEqual(1);
          return s;
        },
        { timeout: 30_000, interval: 100 },
      );
      expect(gauge(failing.text, 'backlog')).toBeGreaterThanOrEqual(1);
      // The lag is the age of the oldest record waiting, here the one the endpoint is blocked on, by the clock of the scrape.
      const lag = gauge(failing.text, 'lag_seconds');
      expect(lag).toBeGreaterThanOrEqual((failing.from - written) / 1000 - 0.05);
      expect(lag).toBeLessThanOrEqual((failing.to - written) / 1000 + 0.05);
      const text = failing.text;
      expect(text).toMatch(/^webhook_attempts_failed_total [1-9]/m);
      expect(text).toMatch(/^webhook_attempts_delivered_total [1-9]/m);
    } finally {
      receiver.answer = previous;
      await t.root.delete(`${API}/${h.id}`);
    }
  });
});

describe('a write pays nothing for its endpoints', () => {
  it('answers a write at once while its endpoint is slow: delivery runs after the commit, off the request', async () => {
    const h = await hook(t.root, { events: ['dept.create'] });
    const previous = receiver.answer;
    receiver.answer = (r) => (r.path === h.path ? { status: 204, delayMs: 3000 } : previous(r));
    try {
      const started = Date.now();
      await dept(t.root, 'Off the request');
      expect(Date.now() - started).toBeLessThan(2500);
      await expect.poll(() => named(h.path, 'Off the request').length, { timeout: 30_000 }).toBe(1);
    } finally {
      receiver.answer = previous;
      await t.root.delete(`${API}/${h.id}`);
    }
  });
});
