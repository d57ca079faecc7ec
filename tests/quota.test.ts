import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, Client, createUserAndLogin, secondNode, type Node, type TestApp } from './support/app.js';
import { purgeKeys } from '../src/quotas/quota.idempotency.js';
import { LOCK } from '../src/db/locks.js';
import {
  createTenant,
  dayFromToday,
  createTenantWithAdmin,
  readTenant,
  writable,
  type TenantWithAdmin,
  type TenantDto,
} from './support/tenant-fixtures.js';

// Quota usage through HTTP (docs/quotas.md): the six allowances of quotaBo
// are limits per service period, read, consumed, refunded and listed at
// /system/quota-api/{tenantId}. Never more than the limit under any
// concurrency (one guarded statement); Idempotency-Key replays, refuses
// another body (422) and a key still running (409); thresholds recorded
// once; periods follow the tenant's startTime. The two-process race is in
// quota.nodes.test.ts.

const API = '/system/quota-api';
const COUNTERS = ['enterpriseQuery', 'annualReportQuery', 'chainReport', 'businessReport', 'riskReport', 'merchant'];

let t: TestApp;
/** A parent tenant (with its admin) under the platform, and a child of it with a user. */
let parent: TenantWithAdmin;
beforeAll(async () => {
  t = await buildTestApp();
  parent = await createTenantWithAdmin(t);
});
afterAll(async () => t?.close());

let keySeq = 0;
const newKey = () => `key-${Date.now()}-${++keySeq}`;
const keyed = (key: string) => ({ 'idempotency-key': key });

/** A new child tenant of `parent` with these allowances (the rest 0), its admin and a user. */
async function childTenant(quotaBo: Record<string, number>, extra: Record<string, unknown> = {}) {
  const child = await createTenantWithAdmin(t, parent.admin, { tenantParent: parent.tenant.tenantId, quotaBo, ...extra });
  const user = await createUserAndLogin(t, child.admin, child.tenant.tenantId, 'user');
  return { ...child, user: user.client };
}

async function consume(as: Client, tenantId: string, body: Record<string, unknown>, key = newKey()) {
  return as.post(`${API}/${tenantId}/consume`, body, keyed(key));
}
async function usage(as: Client, tenantId: string, query = '') {
  const res = await as.get(`${API}/${tenantId}${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as {
    tenantId: string;
    periodStart: string;
    counters: { counter: string; limit: number; used: number; remaining: number | null }[];
  };
}
const counterOf = async (as: Client, tenantId: string, counter: string, query = '') =>
  (await usage(as, tenantId, query)).counters.find((c) => c.counter === counter)!;
/** The quota.threshold records of `tenantId` that `as` sees, newest first: their changes. */
const thresholds = async (as: Client, tenantId: string) =>
  ((await as.get(`/system/audit-api/list?action=quota.threshold&tenantId=${tenantId}&pageSize=100`)).body.data.rows as any[]).map((r) => r.changes);

describe('reading', () => {
  it('answers every counter of the current period: its limit, used 0 and what remains (null when unlimited)', async () => {
    const c = await childTenant({ enterpriseQuery: 10, riskReport: -1, merchant: 3, zr: 7 });
    const data = await usage(c.admin, c.tenant.tenantId);
    expect(data.tenantId).toBe(c.tenant.tenantId);
    expect(data.counters.map((x) => x.counter)).toEqual(COUNTERS);
    expect(data.counters).toContainEqual({ counter: 'enterpriseQuery', limit: 10, used: 0, remaining: 10 });
    expect(data.counters).toContainEqual({ counter: 'riskReport', limit: -1, used: 0, remaining: null });
    expect(data.counters).toContainEqual({ counter: 'chainReport', limit: 0, used: 0, remaining: 0 });
    // Without a startTime the period starts on the day the tenant was created.
    expect(data.periodStart).toBe(c.tenant.createTime.slice(0, 10));
  });

  it("is read by the tenant's own users, the admins above it and the superadmin; by nobody else (404)", async () => {
    const c = await childTenant({ merchant: 1 });
    for (const reader of [c.user, c.admin, parent.admin, t.root]) expect((await reader.get(`${API}/${c.tenant.tenantId}`)).status).toBe(200);
    const sibling = await childTenant({});
    expect((await sibling.admin.get(`${API}/${c.tenant.tenantId}`)).status).toBe(404);
    const parentUser = await createUserAndLogin(t, parent.admin, parent.tenant.tenantId, 'user');
    expect((await parentUser.client.get(`${API}/${c.tenant.tenantId}`)).status).toBe(404);
    expect((await t.root.get(`${API}/999999`)).status).toBe(404);
    expect((await t.root.get(`${API}/12ab`)).status).toBe(400);
  });
});

describe('consuming', () => {
  it('counts the amount and answers consumptionId, limit, used and remaining; the ledger has the row', async () => {
    const c = await childTenant({ riskReport: 5 });
    const res = await consume(c.admin, c.tenant.tenantId, { counter: 'riskReport', amount: 2, reference: 'report 42' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({
      consumptionId: expect.stringMatching(/^[1-9][0-9]*$/),
      counter: 'riskReport',
      amount: 2,
      limit: 5,
      used: 2,
      remaining: 3,
    });
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(await counterOf(c.user, c.tenant.tenantId, 'riskReport')).toEqual({ counter: 'riskReport', limit: 5, used: 2, remaining: 3 });
    const ledger = await c.user.get(`${API}/${c.tenant.tenantId}/ledger`);
    expect(ledger.body.data.total).toBe(1);
    expect(ledger.body.data.rows[0]).toEqual({
      consumptionId: res.body.data.consumptionId,
      counter: 'riskReport',
      amount: 2,
      refunded: 0,
      reference: 'report 42',
      createBy: c.username,
      createTime: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
    });
  });

  it("is for the tenant's admins, the admins above it, the superadmin and their API keys; a user gets 403, another tenant's admin 404", async () => {
    const c = await childTenant({ merchant: 100 });
    for (const caller of [c.admin, parent.admin, t.root]) {
      expect((await consume(caller, c.tenant.tenantId, { counter: 'merchant', amount: 1 })).status).toBe(200);
    }
    // A platform service with an admin API key of the parent consumes for any tenant below it.
    const key = await parent.admin.post('/system/apikey-api', { name: `svc-${Date.now()}`, role: 'admin' });
    expect(key.status).toBe(200);
    const service = new Client(t.app, key.body.data.key);
    expect((await consume(service, c.tenant.tenantId, { counter: 'merchant', amount: 1 })).status).toBe(200);
    const ledger = (await c.admin.get(`${API}/${c.tenant.tenantId}/ledger`)).body.data.rows as any[];
    expect(ledger[0].createBy).toBe(`apikey:${key.body.data.name}`);

    const refused = await consume(c.user, c.tenant.tenantId, { counter: 'merchant', amount: 1 });
    expect(refused.status).toBe(403);
    expect(refused.body.msg).toContain('system:quota:consume');
    const sibling = await childTenant({});
    expect((await consume(sibling.admin, c.tenant.tenantId, { counter: 'merchant', amount: 1 })).status).toBe(404);
    expect((await counterOf(c.admin, c.tenant.tenantId, 'merchant')).used).toBe(4);
  });

  it('refuses a consume past the limit with 409 naming the counter and what is left; nothing is counted', async () => {
    const c = await childTenant({ chainReport: 3 });
    expect((await consume(c.admin, c.tenant.tenantId, { counter: 'chainReport', amount: 2 })).status).toBe(200);
    const over = await consume(c.admin, c.tenant.tenantId, { counter: 'chainReport', amount: 2 });
    expect(over.status).toBe(409);
    expect(over.body.msg).toMatch(/chainReport/);
    expect(over.body.msg).toMatch(/has 1 left/);
    expect((await counterOf(c.admin, c.tenant.tenantId, 'chainReport')).used).toBe(2);
    expect((await consume(c.admin, c.tenant.tenantId, { counter: 'chainReport', amount: 1 })).status).toBe(200);
    const none = await childTenant({});
    const zero = await consume(none.admin, none.tenant.tenantId, { counter: 'businessReport', amount: 1 });
    expect(zero.status).toBe(409);
    expect(zero.body.msg).toMatch(/has 0 left/);
    expect((await c.admin.get(`${API}/${c.tenant.tenantId}/ledger`)).body.data.total).toBe(2);
  });

  it('counts against the largest limit an integer holds, and records its thresholds there too', async () => {
    const big = 2_147_483_647;
    const c = await childTenant({ merchant: big });
    const first = await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 1_000_000 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toMatchObject({ limit: big, used: 1_000_000, remaining: big - 1_000_000 });
    // Near each threshold (set directly: a million a consume would take thousands of requests), a consume crosses it.
    const setUsed = (used: number) => t.sql`UPDATE quota_usage SET used = ${used} WHERE tenant_id = ${c.tenant.tenantId} AND counter = 'merchant'`;
    await setUsed(Math.ceil(big * 0.8) - 5);
    expect((await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 10 })).status).toBe(200);
    await setUsed(big - 10);
    const last = await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 10 });
    expect(last.body.data).toMatchObject({ used: big, remaining: 0 });
    expect((await thresholds(c.admin, c.tenant.tenantId)).map((r) => r.percent).sort()).toEqual([100, 80]);
    expect((await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 1 })).status).toBe(409);
  });

  it('counts without limit at -1, and answers remaining null', async () => {
    const c = await childTenant({ annualReportQuery: -1 });
    await consume(c.admin, c.tenant.tenantId, { counter: 'annualReportQuery', amount: 1_000_000 });
    const res = await consume(c.admin, c.tenant.tenantId, { counter: 'annualReportQuery', amount: 1_000_000 });
    expect(res.body.data).toMatchObject({ limit: -1, used: 2_000_000, remaining: null });
  });

  it.each([
    ['an unknown counter', { counter: 'zr', amount: 1 }, 'counter'],
    ['amount 0', { counter: 'merchant', amount: 0 }, 'amount'],
    ['amount over 1,000,000', { counter: 'merchant', amount: 1_000_001 }, 'amount'],
    ['a fractional amount', { counter: 'merchant', amount: 1.5 }, 'amount'],
    ['a reference over 200 characters', { counter: 'merchant', amount: 1, reference: 'x'.repeat(201) }, 'reference'],
  ])('refuses %s with 400 naming the field', async (_name, body, field) => {
    const c = await childTenant({ merchant: 10 });
    const res = await consume(c.admin, c.tenant.tenantId, body);
    expect(res.status).toBe(400);
    expect(res.body.msg).toContain(field);
    expect((await counterOf(c.admin, c.tenant.tenantId, 'merchant')).used).toBe(0);
  });

  it("refuses a suspended tenant's consume with 403 naming the cause; its refunds and earlier answers still go through", async () => {
    const c = await childTenant({ merchant: 10 });
    const key = newKey();
    const first = await consume(parent.admin, c.tenant.tenantId, { counter: 'merchant', amount: 2 }, key);
    expect(first.status).toBe(200);
    // Suspend the child's whole chain by disabling the parent (as the superadmin).
    const p = await readTenant(t.root, parent.tenant.id);
    expect((await t.root.put('/system/tenant-api', { ...writable(p), status: '1' })).status).toBe(200);
    try {
      const refused = await consume(t.root, c.tenant.tenantId, { counter: 'merchant', amount: 1 });
      expect(refused.status).toBe(403);
      expect(refused.body.msg).toContain(parent.tenant.tenantId);
      expect(refused.body.msg).toContain('disabled');
      const replay = await consume(t.root, c.tenant.tenantId, { counter: 'merchant', amount: 2 }, key);
      expect(replay.status).toBe(200);
      expect(replay.body.data).toEqual(first.body.data);
      const back = await t.root.post(`${API}/${c.tenant.tenantId}/refund`, { consumptionId: first.body.data.consumptionId }, keyed(newKey()));
      expect(back.status, JSON.stringify(back.body)).toBe(200);
    } finally {
      const again = await readTenant(t.root, parent.tenant.id);
      expect((await t.root.put('/system/tenant-api', { ...writable(again), status: '0' })).status).toBe(200);
    }
    parent = { ...parent, admin: await t.login(parent.tenant.tenantId, parent.username, parent.password) };
    expect((await consume(parent.admin, c.tenant.tenantId, { counter: 'merchant', amount: 1 })).status).toBe(200);
  });
});

describe('Idempotency-Key', () => {
  it('is required: missing or malformed gets 400 and nothing is counted', async () => {
    const c = await childTenant({ merchant: 10 });
    const url = `${API}/${c.tenant.tenantId}/consume`;
    const body = { counter: 'merchant', amount: 1 };
    const missing = await c.admin.post(url, body);
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toContain('idempotency-key');
    for (const bad of ['has space', 'x'.repeat(256), 'ключ', '']) {
      const res = await c.admin.post(url, body, keyed(bad));
      expect(res.status, bad).toBe(400);
    }
    expect((await c.admin.post(url, body, keyed('x'.repeat(255)))).status).toBe(200);
    expect((await counterOf(c.admin, c.tenant.tenantId, 'merchant')).used).toBe(1);
  });

  it('answers the first answer again to the same key and body, whoever calls, with Idempotent-Replayed: true, and counts nothing more', async () => {
    const c = await childTenant({ merchant: 10 });
    const key = newKey();
    const body = { counter: 'merchant', amount: 3, reference: 'order 7' };
    const first = await consume(c.admin, c.tenant.tenantId, body, key);
    expect(first.status).toBe(200);
    // Field order does not make another body.
    const again = await consume(parent.admin, c.tenant.tenantId, { reference: 'order 7', amount: 3, counter: 'merchant' }, key);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect((await counterOf(c.admin, c.tenant.tenantId, 'merchant')).used).toBe(3);
    expect((await c.admin.get(`${API}/${c.tenant.tenantId}/ledger`)).body.data.total).toBe(1);
  });

  it('keeps a key at least 7 days: the purge drops only keys past 8 days, after which the key is new again', async () => {
    const c = await childTenant({ merchant: 10 });
    const [young, old] = [newKey(), newKey()];
    for (const key of [young, old]) expect((await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 1 }, key)).status).toBe(200);
    const age = (key: string, days: number) =>
      t.sql`UPDATE quota_idempotency SET create_time = now() - make_interval(days => ${days}) WHERE tenant_id = ${c.tenant.tenantId} AND idem_key = ${key}`;
    await age(young, 7);
    await age(old, 9);
    expect(await purgeKeys(t.appSql)).toBeGreaterThanOrEqual(1);
    const replay = await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 1 }, young);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    // The purged key answers as a new one: another body is no longer 422, and it counts.
    const again = await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 2 }, old);
    expect(again.status).toBe(200);
    expect(again.body.data.used).toBe(4);
  });

  it('refuses the same key with another body (422), and keys of one tenant are not those of another', async () => {
    const c = await childTenant({ merchant: 10 });
    const d = await childTenant({ merchant: 10 });
    const key = newKey();
    expect((await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 1 }, key)).status).toBe(200);
    for (const other of [
      { counter: 'merchant', amount: 2 },
      { counter: 'merchant', amount: 1, reference: 'r' },
    ]) {
      const res = await consume(c.admin, c.tenant.tenantId, other, key);
      expect(res.status).toBe(422);
      expect(res.body.msg).toContain(key);
    }
    // A refund with a consume's key is another body too.
    const refund = await c.admin.post(`${API}/${c.tenant.tenantId}/refund`, { consumptionId: '1' }, keyed(key));
    expect(refund.status).toBe(422);
    const elsewhere = await consume(parent.admin, d.tenant.tenantId, { counter: 'merchant', amount: 1 }, key);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.headers['idempotent-replayed']).toBeUndefined();
    expect((await counterOf(c.admin, c.tenant.tenantId, 'merchant')).used).toBe(1);
  });

  it('keeps no key for a refused consume: the same request succeeds after a top-up', async () => {
    const c = await childTenant({ businessReport: 1 });
    const key = newKey();
    const body = { counter: 'businessReport', amount: 2 };
    expect((await consume(c.admin, c.tenant.tenantId, body, key)).status).toBe(409);
    const tenant = await readTenant(parent.admin, c.tenant.id);
    expect((await parent.admin.put('/system/tenant-api', { ...writable(tenant), quotaBo: { ...tenant.quotaBo, businessReport: 5 } })).status).toBe(
      200,
    );
    const retried = await consume(c.admin, c.tenant.tenantId, body, key);
    expect(retried.status).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(retried.body.data).toMatchObject({ used: 2, remaining: 3 });
  });

  it('answers 409 while the first request with the key is still running, then replays its answer', async (ctx) => {
    if (t.kind === 'pglite') ctx.skip(); // one connection runs one statement at a time: nothing is ever still running
    const c = await childTenant({ merchant: 10 });
    expect((await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 1 })).status).toBe(200);
    const key = newKey();
    const body = { counter: 'merchant', amount: 1 };
    // Hold the counter's row, so the first request with the key waits in its statement, holding the key.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const holder = t.direct.begin(async (tx) => {
      await tx`SELECT used FROM quota_usage WHERE tenant_id = ${c.tenant.tenantId} AND counter = 'merchant' FOR UPDATE`;
      holding();
      await released;
    });
    await held;
    const first = consume(c.admin, c.tenant.tenantId, body, key);
    try {
      // The first consume holds its key's lock while it waits for the held row. (Read from pg_locks, not from a
      // statement waiting for a lock in pg_stat_activity: on Citus the row lock is waited for on a worker, and
      // the key's lock is taken on the server the statement started on, as on plain PostgreSQL.)
      await expect
        .poll(
          async () => {
            const [row] = await t.direct<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_locks
            WHERE locktype = 'advisory' AND granted AND classid = ${LOCK.quotaKeys}
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
            return row!.n;
          },
          { timeout: 5_000, interval: 25, message: 'no consume held its key' },
        )
        .toBeGreaterThan(0);
      const second = await consume(parent.admin, c.tenant.tenantId, body, key);
      expect(second.status).toBe(409);
      expect(second.body.msg).toMatch(/still running/);
    } finally {
      release();
      await holder;
    }
    const answered = await first;
    expect(answered.status).toBe(200);
    const third = await consume(parent.admin, c.tenant.tenantId, body, key);
    expect(third.headers['idempotent-replayed']).toBe('true');
    expect(third.body.data).toEqual(answered.body.data);
    expect((await counterOf(c.admin, c.tenant.tenantId, 'merchant')).used).toBe(2);
  });
});

describe('concurrency', () => {
  it('lets N concurrent consumes of 1 against R remaining succeed exactly min(N, R) times', async () => {
    const c = await childTenant({ riskReport: 50 });
    expect((await consume(c.admin, c.tenant.tenantId, { counter: 'riskReport', amount: 25 })).status).toBe(200);
    const results = await Promise.all(Array.from({ length: 40 }, () => consume(c.admin, c.tenant.tenantId, { counter: 'riskReport', amount: 1 })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(25);
    expect(statuses.filter((s) => s === 409)).toHaveLength(15);
    expect(await counterOf(c.admin, c.tenant.tenantId, 'riskReport')).toMatchObject({ used: 50, remaining: 0 });
    expect((await c.admin.get(`${API}/${c.tenant.tenantId}/ledger`)).body.data.total).toBe(26);
    // Each success saw its own count: the answers' `used` are 26..50, once each.
    const used = results
      .filter((r) => r.status === 200)
      .map((r) => r.body.data.used as number)
      .sort((a, b) => a - b);
    expect(used).toEqual(Array.from({ length: 25 }, (_, i) => 26 + i));
  });

  it('holds across two nodes with their own pools, with the same key sent to both at once counted once', async (ctx) => {
    if (t.kind === 'pglite') ctx.skip(); // one process owns the embedded database: no second node
    const node2: Node = await secondNode(t);
    try {
      const c = await childTenant({ enterpriseQuery: 30 });
      const other = new Client(node2.app, c.admin.token);
      const calls = Array.from({ length: 50 }, (_, i) =>
        consume(i % 2 ? other : c.admin, c.tenant.tenantId, { counter: 'enterpriseQuery', amount: 1 }),
      );
      const statuses = (await Promise.all(calls)).map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(30);
      expect(statuses.filter((s) => s === 409)).toHaveLength(20);

      const d = await childTenant({ enterpriseQuery: 100 });
      const key = newKey();
      const peer = new Client(node2.app, d.admin.token);
      const twice = await Promise.all(
        Array.from({ length: 10 }, (_, i) => consume(i % 2 ? peer : d.admin, d.tenant.tenantId, { counter: 'enterpriseQuery', amount: 7 }, key)),
      );
      // Each is the first answer, its replay, or "still running": never a second count.
      for (const r of twice) expect([200, 409]).toContain(r.status);
      const answers = new Set(twice.filter((r) => r.status === 200).map((r) => JSON.stringify(r.body.data)));
      expect(answers.size).toBe(1);
      expect((await counterOf(d.admin, d.tenant.tenantId, 'enterpriseQuery')).used).toBe(7);
    } finally {
      await node2.close();
    }
  });
});

describe('thresholds', () => {
  it("records 80% and 100% once per counter and period, in the tenant's own trail; a consume crossing both records both", async () => {
    const c = await childTenant({ merchant: 10, chainReport: 5 });
    const tid = c.tenant.tenantId;
    await consume(c.admin, tid, { counter: 'merchant', amount: 7 });
    expect(await thresholds(c.admin, c.tenant.tenantId)).toEqual([]);
    await consume(c.admin, tid, { counter: 'merchant', amount: 1 });
    expect(await thresholds(c.admin, c.tenant.tenantId)).toEqual([{ counter: 'merchant', percent: 80, limit: 10, used: 8 }]);
    const eight = await c.admin.get('/system/audit-api/list?action=quota.threshold');
    expect(eight.body.data.rows[0]).toMatchObject({ tenantId: tid, entityType: 'quota', entityId: 'merchant' });
    await consume(c.admin, tid, { counter: 'merchant', amount: 1 });
    const last = await consume(c.admin, tid, { counter: 'merchant', amount: 1 });
    expect((await thresholds(c.admin, c.tenant.tenantId))[0]).toEqual({ counter: 'merchant', percent: 100, limit: 10, used: 10 });
    // Given back and taken again: the thresholds were announced already this period.
    await c.admin.post(`${API}/${tid}/refund`, { consumptionId: last.body.data.consumptionId }, keyed(newKey()));
    await consume(c.admin, tid, { counter: 'merchant', amount: 1 });
    expect(await thresholds(c.admin, c.tenant.tenantId)).toHaveLength(2);
    await consume(c.admin, tid, { counter: 'chainReport', amount: 5 });
    const both = await thresholds(c.admin, c.tenant.tenantId);
    expect(both).toHaveLength(4);
    expect(both.slice(0, 2)).toEqual(
      expect.arrayContaining([
        { counter: 'chainReport', percent: 80, limit: 5, used: 5 },
        { counter: 'chainReport', percent: 100, limit: 5, used: 5 },
      ]),
    );
    // The admins above see them in their feed too.
    expect((await thresholds(parent.admin, tid)).filter((r) => r.counter === 'chainReport')).toHaveLength(2);
  });

  it('records each threshold exactly once when many consumes cross it at once', async () => {
    const c = await childTenant({ riskReport: 20 });
    await Promise.all(Array.from({ length: 30 }, () => consume(c.admin, c.tenant.tenantId, { counter: 'riskReport', amount: 1 })));
    const records = await thresholds(c.admin, c.tenant.tenantId);
    expect(records.map((r) => r.percent).sort()).toEqual([100, 80]);
    expect(records.find((r) => r.percent === 80)).toEqual({ counter: 'riskReport', percent: 80, limit: 20, used: 16 });
  });

  it('writes none when a lowered limit puts used past a threshold; the limit applies at once and nothing is clawed back', async () => {
    const c = await childTenant({ merchant: 100 });
    await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 50 });
    const tenant = await readTenant(parent.admin, c.tenant.id);
    expect((await parent.admin.put('/system/tenant-api', { ...writable(tenant), quotaBo: { ...tenant.quotaBo, merchant: 40 } })).status).toBe(200);
    expect(await counterOf(c.admin, c.tenant.tenantId, 'merchant')).toEqual({ counter: 'merchant', limit: 40, used: 50, remaining: 0 });
    expect((await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 1 })).status).toBe(409);
    expect(await thresholds(c.admin, c.tenant.tenantId)).toEqual([]);
  });
});

describe('refunds', () => {
  it('gives back part, then the rest, to the period it was taken from; never more than taken (400)', async () => {
    const c = await childTenant({ merchant: 10 });
    const tid = c.tenant.tenantId;
    const taken = (await consume(c.admin, tid, { counter: 'merchant', amount: 5 })).body.data;
    const refund = (body: Record<string, unknown>, key = newKey()) => c.admin.post(`${API}/${tid}/refund`, body, keyed(key));
    const key = newKey();
    const part = await refund({ consumptionId: taken.consumptionId, amount: 2 }, key);
    expect(part.status, JSON.stringify(part.body)).toBe(200);
    expect(part.body.data).toEqual({ consumptionId: taken.consumptionId, counter: 'merchant', amount: 2, refunded: 2, used: 3 });
    const replay = await refund({ consumptionId: taken.consumptionId, amount: 2 }, key);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data).toEqual(part.body.data);
    const beyond = await refund({ consumptionId: taken.consumptionId, amount: 4 });
    expect(beyond.status).toBe(400);
    expect(beyond.body.msg).toMatch(/holds 3/);
    const rest = await refund({ consumptionId: taken.consumptionId });
    expect(rest.body.data).toMatchObject({ amount: 3, refunded: 5, used: 0 });
    expect((await refund({ consumptionId: taken.consumptionId })).status).toBe(400);
    const row = (await c.admin.get(`${API}/${tid}/ledger`)).body.data.rows[0];
    expect(row).toMatchObject({ consumptionId: taken.consumptionId, amount: 5, refunded: 5 });
    expect(await counterOf(c.admin, tid, 'merchant')).toMatchObject({ used: 0, remaining: 10 });
  });

  it("answers 404 for a consumption that is not the tenant's, and refuses users (403)", async () => {
    const c = await childTenant({ merchant: 10 });
    const d = await childTenant({ merchant: 10 });
    const taken = (await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 1 })).body.data;
    const elsewhere = await parent.admin.post(`${API}/${d.tenant.tenantId}/refund`, { consumptionId: taken.consumptionId }, keyed(newKey()));
    expect(elsewhere.status).toBe(404);
    expect((await c.admin.post(`${API}/${c.tenant.tenantId}/refund`, { consumptionId: '999999999' }, keyed(newKey()))).status).toBe(404);
    expect((await c.user.post(`${API}/${c.tenant.tenantId}/refund`, { consumptionId: taken.consumptionId }, keyed(newKey()))).status).toBe(403);
    expect((await c.admin.post(`${API}/${c.tenant.tenantId}/refund`, { consumptionId: 'abc' }, keyed(newKey()))).status).toBe(400);
    expect((await counterOf(c.admin, c.tenant.tenantId, 'merchant')).used).toBe(1);
  });

  it('never gives back more than taken when refunds race', async () => {
    const c = await childTenant({ merchant: 100 });
    const taken = (await consume(c.admin, c.tenant.tenantId, { counter: 'merchant', amount: 10 })).body.data;
    const results = await Promise.all(
      Array.from({ length: 25 }, () =>
        c.admin.post(`${API}/${c.tenant.tenantId}/refund`, { consumptionId: taken.consumptionId, amount: 1 }, keyed(newKey())),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(10);
    expect(results.filter((r) => r.status === 400)).toHaveLength(15);
    expect((await counterOf(c.admin, c.tenant.tenantId, 'merchant')).used).toBe(0);
  });
});

describe('periods', () => {
  it('starts a renewal from 0, keeps the old period readable, and refunds go to the period they were taken from', async () => {
    const oldStart = dayFromToday(-40);
    const c = await childTenant({ merchant: 10 }, { startTime: oldStart, endTime: dayFromToday(300) });
    const tid = c.tenant.tenantId;
    expect((await usage(c.admin, tid)).periodStart).toBe(oldStart);
    const taken = (await consume(c.admin, tid, { counter: 'merchant', amount: 6, reference: 'old' })).body.data;
    await consume(c.admin, tid, { counter: 'merchant', amount: 2 });

    // The renewal: a new startTime.
    const newStart = dayFromToday(-1);
    const tenant: TenantDto = await readTenant(parent.admin, c.tenant.id);
    expect((await parent.admin.put('/system/tenant-api', { ...writable(tenant), startTime: newStart })).status).toBe(200);
    const current = await usage(c.admin, tid);
    expect(current.periodStart).toBe(newStart);
    expect(current.counters.find((x) => x.counter === 'merchant')).toEqual({ counter: 'merchant', limit: 10, used: 0, remaining: 10 });
    expect((await consume(c.admin, tid, { counter: 'merchant', amount: 10 })).status).toBe(200);

    const old = await counterOf(c.admin, tid, 'merchant', `?periodStart=${oldStart}`);
    expect(old).toMatchObject({ used: 8, remaining: 0 });
    const refunded = await c.admin.post(`${API}/${tid}/refund`, { consumptionId: taken.consumptionId }, keyed(newKey()));
    expect(refunded.body.data).toMatchObject({ amount: 6, used: 2 });
    expect((await counterOf(c.admin, tid, 'merchant', `?periodStart=${oldStart}`)).used).toBe(2);
    expect((await counterOf(c.admin, tid, 'merchant')).used).toBe(10);

    const oldLedger = (await c.admin.get(`${API}/${tid}/ledger?periodStart=${oldStart}`)).body.data;
    expect(oldLedger.total).toBe(2);
    expect((await c.admin.get(`${API}/${tid}/ledger?periodStart=${newStart}&counter=merchant`)).body.data.total).toBe(1);
    expect((await c.admin.get(`${API}/${tid}/ledger?counter=riskReport`)).body.data.total).toBe(0);
  });
});

describe('the tenant API', () => {
  it('keeps quotaBo as sent, -1 included, and its reads unchanged by consumes', async () => {
    const c = await childTenant({ merchant: -1, riskReport: 4 });
    await consume(c.admin, c.tenant.tenantId, { counter: 'riskReport', amount: 3 });
    const read = await readTenant(parent.admin, c.tenant.id);
    expect(read.quotaBo).toMatchObject({ merchant: -1, riskReport: 4 });
    const created = await createTenant(parent.admin, { tenantParent: parent.tenant.tenantId, quotaBo: { pf: 2 } });
    expect(created.quotaBo.pf).toBe(2);
  });
});
