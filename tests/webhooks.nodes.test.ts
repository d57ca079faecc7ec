import { describe, expect, inject, it } from 'vitest';
import { parseAllowedCidrs } from '../src/outbound/outbound.address.js';
import type { DeliveryOptions } from '../src/webhooks/webhook.options.js';
import { buildTestApp, Client, ADMIN_PASSWORD, secondNode, type Node, type TestApp } from './support/app.js';
import { call, loginAt, serviceDatabase, startService, type Service } from './support/service.js';
import { WebhookReceiver, type Received } from './support/webhook-receiver.js';

// Webhook delivery when nodes die, run side by side, or leave
// (docs/webhooks.md#delivery): each endpoint gets every record of its
// filter, in feed order, with at most one delivery in flight at a time
// across all nodes. A node killed mid-delivery makes the endpoint wait one
// lease (WEBHOOK_TIMEOUT + 10 s) and then resend only the event that was in
// flight, same webhook-id and same bytes; a clean run, whichever nodes
// deliver, sends each event exactly once.
//
// The receiver records each request's arrival and answer (tests/support/
// webhook-receiver.ts); the truth the arrivals are checked against is the
// change feed read back over the API (GET /system/audit-api/changes).

const LOOPBACK = '127.0.0.0/8,::1/128';

const idOf = (r: Received) => String(r.headers['webhook-id']);
/** `audit_123` -> 123n: record ids are compared as numbers, never as strings. */
const positionOf = (webhookId: string) => BigInt(webhookId.replace(/^audit_/, ''));

/** The distinct webhook-ids in order of first arrival. */
function firstArrivals(received: Received[]): string[] {
  return [...new Set(received.map(idOf))];
}

function expectStrictlyIncreasing(ids: string[], label: string): void {
  for (let i = 1; i < ids.length; i++) {
    expect(positionOf(ids[i]!) > positionOf(ids[i - 1]!), `${label}: ${ids[i]} arrived after ${ids[i - 1]}`).toBe(true);
  }
}

/** Every record of the feed after `after` (all pages), as the caller sees them. */
async function changesAfter(read: (path: string) => Promise<{ events: { id: string; action: string }[] }>, after: string) {
  const events: { id: string; action: string }[] = [];
  for (let cursor = after; ;) {
    const page = await read(`/system/audit-api/changes?after=${cursor}&limit=1000`);
    if (page.events.length === 0) return events;
    events.push(...page.events);
    cursor = page.events.at(-1)!.id;
  }
}

/**
 * A database of its own and a loopback receiver for `body`, which starts
 * services on them with `start` (`env` on top of the database's and the
 * loopback allowlist). Afterwards, whatever happened, every service still
 * running is killed, the receiver closed and the database removed.
 */
async function withServices(body: (ctx: { receiver: WebhookReceiver; start: (env: Record<string, string>) => Promise<Service> }) => Promise<void>) {
  const db = await serviceDatabase();
  const receiver = await WebhookReceiver.start();
  const services: Service[] = [];
  try {
    await body({
      receiver,
      start: async (env) => {
        const service = await startService({ ...db.env, WEBHOOK_ALLOWED_CIDRS: LOOPBACK, ...env });
        services.push(service);
        return service;
      },
    });
  } finally {
    for (const s of services) {
      if (s.child.exitCode === null && s.child.signalCode === null) {
        s.child.kill('SIGKILL');
        await s.exited;
      }
    }
    await receiver.close();
    await db.dispose();
  }
}

describe('kill -9 in the middle of a delivery', () => {
  const PASSWORD = 'hooks-kill-pw-1';
  const CREATES = 30;
  // Long enough that deliveries queue up behind each other, so the kill
  // finds one in flight and most of the records still undelivered.
  const SLOW_MS = 300;

  it(`resends from the written cursor after a restart (the event in flight and any acknowledgement not yet written), and delivers all ${CREATES} in feed order`, async () => {
    await withServices(async ({ receiver, start }) => {
      const env = {
        ADMIN_PASSWORD: PASSWORD,
        WEBHOOK_ALLOWED_CIDRS: LOOPBACK,
        // A lease lasts WEBHOOK_TIMEOUT + 10 s: the restarted node resumes within 12 s of the kill.
        WEBHOOK_TIMEOUT: '2',
        WEBHOOK_RETRY_SCHEDULE: '0.5,0.5,0.5,0.5,0.5',
      };
      const first = await start(env);
      const token = await loginAt(first.base, '000000', 'admin', PASSWORD);
      const made = await call(first.base, 'POST', '/system/webhook-api', { url: receiver.url('/kill'), events: ['dept.create'] }, token);
      expect(made.status).toBe(200);
      const endpoint = made.body.data as { id: number; cursor: string };

      // The kill comes from inside the receiver, on the arrival of a request
      // it has not answered yet: the delivery is in flight by construction.
      let armed = false;
      let killIndex = -1;
      let killedAt = 0;
      receiver.answer = () => {
        if (armed && killIndex < 0) {
          killIndex = receiver.received.length - 1;
          killedAt = Date.now();
          first.child.kill('SIGKILL');
        }
        return { status: 204, delayMs: SLOW_MS };
      };

      for (let i = 0; i < CREATES; i++) {
        const res = await call(first.base, 'POST', '/system/dept-api', { parentId: 0, deptName: `Hooked ${i}` }, token);
        expect(res.status).toBe(200);
      }
      // A feed read positions every committed record first, so all of them
      // are in the feed (and due) before the kill.
      const read = async (base: string, t: string, path: string) => (await call(base, 'GET', path, undefined, t)).body.data;
      const expected = (await changesAfter((path) => read(first.base, token, path), endpoint.cursor))
        .filter((e) => e.action === 'dept.create')
        .map((e) => `audit_${e.id}`);
      expect(expected).toHaveLength(CREATES);
      expect(receiver.received.length, 'the kill must find records still undelivered').toBeLessThan(CREATES - 5);
      armed = true;

      await expect.poll(() => killIndex >= 0, { timeout: 30_000, interval: 25, message: 'a delivery to arrive after the creates' }).toBe(true);
      expect((await first.exited).signal).toBe('SIGKILL');
      const inFlight = idOf(receiver.received[killIndex]!);
      const beforeKill = receiver.received.slice(0, killIndex + 1).map(idOf);
      // Quick answers from now on: only the restart and the lease should take time.
      receiver.answer = () => ({ status: 204 });

      const second = await start(env);
      const restartedAt = Date.now();
      // One lease (12 s) from the dead node's last renewal, plus the restart and a poll.
      await expect
        .poll(() => firstArrivals(receiver.received).length >= CREATES, {
          timeout: 40_000,
          interval: 25,
          message: `all ${CREATES} events after the restart`,
        })
        .toBe(true);
      const token2 = await loginAt(second.base, '000000', 'admin', PASSWORD);
      const after = await call(second.base, 'GET', `/system/webhook-api/${endpoint.id}`, undefined, token2);
      expect(after.body.data).toMatchObject({ status: '0', failures: 0, cursor: expected.at(-1)!.replace('audit_', '') });
      // Anything sent twice would have arrived by now: the last record is acknowledged.
      await new Promise((r) => setTimeout(r, 300));

      const ids = receiver.received.map(idOf);
      // None skipped, none foreign: exactly the dept.create records of the feed.
      expect(new Set(ids)).toEqual(new Set(expected));
      // Feed order of first arrival, across the kill.
      expect(firstArrivals(receiver.received)).toEqual(expected);
      expectStrictlyIncreasing(firstArrivals(receiver.received), 'first arrivals');
      // Before the kill each event went once; afterwards delivery resumed at
      // the written cursor, so nothing goes back further than the
      // acknowledgements whose write had not committed (docs/webhooks.md#delivery).
      expect(new Set(beforeKill).size).toBe(beforeKill.length);
      const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
      // After the kill: from the first record sent again on, each once, in feed order.
      expect(ids.slice(killIndex + 1, killIndex + 1 + repeated.length)).toEqual(repeated);
      expectStrictlyIncreasing(ids.slice(killIndex + 1), 'after the kill');
      // Sent again: the one in flight (never acknowledged) and any acknowledged just before it, each once, in order.
      expect(repeated.at(-1), `${inFlight} was in flight at the kill`).toBe(inFlight);
      expect(repeated).toEqual(beforeKill.slice(beforeKill.length - repeated.length));
      // With answers this slow each acknowledgement is written long before the next one comes: only the one
      // acknowledged just before the kill (its write racing the next request) may be lost besides the one in flight.
      expect(repeated.length).toBeLessThanOrEqual(2);
      for (const id of repeated) {
        const copies = receiver.received.filter((r) => idOf(r) === id);
        // Same id, same bytes, after the restart.
        expect(copies).toHaveLength(2);
        expect(copies[1]!.raw.equals(copies[0]!.raw)).toBe(true);
        expect(copies[1]!.at).toBeGreaterThan(killedAt);
      }
      const resent = receiver.received.find((r, i) => i > killIndex && idOf(r) === repeated[0])!;
      // The restarted node is a new lease owner: it waits out the dead node's
      // lease, last renewed by the write of the last acknowledgement that
      // committed (after that record's answer), and no longer than that (a
      // poll, 1 s, later), unless its start took longer.
      const LEASE_MS = 12_000;
      const lastWritten = killIndex - repeated.length;
      if (lastWritten >= 0) expect(resent.at - receiver.received[lastWritten]!.answeredAt!).toBeGreaterThanOrEqual(LEASE_MS - 100);
      expect(resent.at - Math.max(killedAt + LEASE_MS, restartedAt)).toBeLessThan(5000);
      const copies = receiver.received.filter((r) => idOf(r) === inFlight);
      expect(JSON.parse(copies[0]!.raw.toString('utf8'))).toMatchObject({ type: 'dept.create', data: { id: inFlight.replace('audit_', '') } });

      expect(await second.stop()).toEqual({ code: 0, signal: null });
    });
  }, 120_000);
});

describe('a node killed before its sequencer ran', () => {
  const PASSWORD = 'hooks-gap-pw-1';

  // A record is written without a feed position; the writing node positions
  // it about 200 ms after the write. Killed in between, it leaves a record
  // only a later write or feed read would position, so the worker's poll
  // runs the sequencer itself: with nothing but GETs after the restart, the
  // record is still delivered.
  it('delivers the record after a restart, with no write or feed read to position it', async () => {
    await withServices(async ({ receiver, start }) => {
      const env = { ADMIN_PASSWORD: PASSWORD, WEBHOOK_ALLOWED_CIDRS: LOOPBACK, WEBHOOK_TIMEOUT: '2' };
      const first = await start(env);
      const token = await loginAt(first.base, '000000', 'admin', PASSWORD);
      expect((await call(first.base, 'POST', '/system/webhook-api', { url: receiver.url('/gap'), events: ['dept.create'] }, token)).status).toBe(200);
      const res = await call(first.base, 'POST', '/system/dept-api', { parentId: 0, deptName: 'Unsequenced' }, token);
      // Before the sequencer's kick 200 ms after the write.
      first.child.kill('SIGKILL');
      expect(res.status).toBe(200);
      await first.exited;
      const second = await start(env);
      await expect
        .poll(() => receiver.received.length > 0, { timeout: 30_000, interval: 25, message: 'the record written just before the kill' })
        .toBe(true);
      expect(JSON.parse(receiver.received[0]!.raw.toString()).data.changes.deptName).toBe('Unsequenced');
      expect(await second.stop()).toEqual({ code: 0, signal: null });
    });
  }, 120_000);
});

describe('shutdown during a delivery that hangs', () => {
  const PASSWORD = 'hooks-term-pw-1';

  // SIGTERM while a receiver holds a delivery open (WEBHOOK_TIMEOUT 30 s):
  // the attempt is abandoned after a short grace, the lease goes back, the
  // process exits 0 well before the timeout, and the restarted service sends
  // the record again at once instead of waiting out a lease.
  it('exits 0 within a few seconds, and the restarted service resends the record at once', async () => {
    await withServices(async ({ receiver, start }) => {
      let hang = true;
      receiver.answer = () => (hang ? { status: 204, delayMs: 60_000 } : { status: 204 });
      const env = { ADMIN_PASSWORD: PASSWORD, WEBHOOK_ALLOWED_CIDRS: LOOPBACK, WEBHOOK_TIMEOUT: '30' };
      const first = await start(env);
      const token = await loginAt(first.base, '000000', 'admin', PASSWORD);
      expect((await call(first.base, 'POST', '/system/webhook-api', { url: receiver.url('/term'), events: ['dept.create'] }, token)).status).toBe(
        200,
      );
      expect((await call(first.base, 'POST', '/system/dept-api', { parentId: 0, deptName: 'Held open' }, token)).status).toBe(200);
      await expect
        .poll(() => receiver.received.length === 1, { timeout: 30_000, interval: 25, message: 'the delivery the receiver holds open' })
        .toBe(true);
      const stopping = Date.now();
      expect(await first.stop()).toEqual({ code: 0, signal: null });
      expect(Date.now() - stopping).toBeLessThan(8_000);

      hang = false;
      const second = await start(env);
      const restarted = Date.now();
      await expect
        .poll(() => receiver.received.length === 2, { timeout: 30_000, interval: 25, message: 'the record sent again after the restart' })
        .toBe(true);
      // Not after a lease of WEBHOOK_TIMEOUT + 10 s: the first process gave it back.
      expect(Date.now() - restarted).toBeLessThan(10_000);
      expect(receiver.received[1]!.headers['webhook-id']).toBe(receiver.received[0]!.headers['webhook-id']);
      expect(await second.stop()).toEqual({ code: 0, signal: null });
    });
  }, 120_000);
});

describe.skipIf(!inject('databaseUrl'))('several nodes on one PostgreSQL database', () => {
  const options = (concurrency: number, timeoutMs = 5000): Partial<DeliveryOptions> => ({
    allowed: parseAllowedCidrs(LOOPBACK),
    timeoutMs,
    retrySchedule: [0.2, 0.2, 0.2],
    concurrency,
    pollMs: 100,
    maintenanceMs: 60_000,
  });

  interface Run {
    t: TestApp;
    receiver: WebhookReceiver;
    /** Per path, the requests that arrived while another to the same path was unanswered. */
    overlaps: string[];
    endpoints: { id: number; path: string; cursor: string }[];
  }

  /** A receiver that notes any second request to a path while the first is unanswered, and endpoints to it, one per path. */
  async function endpointsOn(t: TestApp, paths: string[], delayMs: number): Promise<Run> {
    const receiver = await WebhookReceiver.start();
    const overlaps: string[] = [];
    receiver.answer = (r) => {
      // answeredAt is set just before the answer is written, so an unanswered
      // request here is one the sender is still waiting for.
      const open = receiver.received.filter((o) => o !== r && o.path === r.path && o.answeredAt === undefined);
      if (open.length > 0) overlaps.push(`${r.path}: ${idOf(r)} arrived while ${open.map(idOf).join(', ')} was unanswered`);
      return { status: 204, delayMs };
    };
    // Positions every record written so far, so the new endpoints start after all of them.
    await t.root.get('/system/audit-api/changes?limit=1');
    const endpoints = [];
    for (const path of paths) {
      const res = await t.root.post('/system/webhook-api', { url: receiver.url(path), events: ['dept.*'] });
      expect(res.status).toBe(200);
      endpoints.push({ id: res.body.data.id as number, path, cursor: res.body.data.cursor as string });
    }
    return { t, receiver, overlaps, endpoints };
  }

  /** Each endpoint got each dept record after its start exactly once, in increasing record id, one request at a time. */
  async function expectEachOnceInOrder(run: Run): Promise<void> {
    const { t, receiver, endpoints } = run;
    const from = endpoints.map((e) => e.cursor).reduce((a, b) => (BigInt(a) < BigInt(b) ? a : b));
    const feed = await changesAfter(async (path) => (await t.root.get(path)).body.data, from);
    const expectedFor = (cursor: string) =>
      feed.filter((e) => e.action.startsWith('dept.') && BigInt(e.id) > BigInt(cursor)).map((e) => `audit_${e.id}`);
    for (const e of endpoints) {
      const expected = expectedFor(e.cursor);
      await expect
        .poll(() => receiver.received.filter((r) => r.path === e.path).length >= expected.length, {
          timeout: 20_000,
          interval: 25,
          message: `${expected.length} events at ${e.path}`,
        })
        .toBe(true);
    }
    // A duplicate would arrive within a few polls.
    await new Promise((r) => setTimeout(r, 500));
    for (const e of endpoints) {
      const got = receiver.received.filter((r) => r.path === e.path).map(idOf);
      expect(got, `${e.path}: every event exactly once, in feed order`).toEqual(expectedFor(e.cursor));
      expectStrictlyIncreasing(got, e.path);
    }
    expect(run.overlaps, 'two deliveries in flight at once to one endpoint').toEqual([]);
  }

  async function cleanUp(run: Run | undefined): Promise<void> {
    if (!run) return;
    for (const e of run.endpoints) await run.t.root.delete(`/system/webhook-api/${e.id}`);
    await run.receiver.close();
  }

  /**
   * Department creates on each client, `perClient` one after another with a
   * short random pause, the clients side by side: endpoints catch up, give
   * their leases back and are claimed again, by either node, many times over.
   */
  async function writeOn(clients: Client[], perClient: number, label: string): Promise<void> {
    await Promise.all(
      clients.map(async (client, c) => {
        for (let i = 0; i < perClient; i++) {
          const res = await client.post('/system/dept-api', { parentId: 0, deptName: `${label} c${c} n${i}` });
          expect(res.status).toBe(200);
          await new Promise((r) => setTimeout(r, Math.random() * 40));
        }
      }),
    );
  }

  async function signedInOn(node: Node): Promise<Client> {
    const login = await new Client(node.app).post('/auth/login', { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD });
    expect(login.status).toBe(200);
    return new Client(node.app, login.body.data.access_token);
  }

  it('two nodes writing and delivering: one request in flight per endpoint, each event once, in order', async () => {
    // Two endpoints per node at most: with three endpoints neither node can hold them all.
    const t = await buildTestApp({ webhooks: options(2) });
    let node: Node | undefined;
    let run: Run | undefined;
    try {
      node = await secondNode(t, { webhooks: options(2) });
      const root2 = await signedInOn(node);
      run = await endpointsOn(t, ['/a', '/b', '/c'], 15);
      // Two writers on each node: every record is announced on both (NOTIFY), and both race to claim.
      await writeOn([t.root, t.root, root2, root2], 10, 'Two nodes');
      await expectEachOnceInOrder(run);
      expect(t.app.webhooks.counts.failed + node.app.webhooks.counts.failed).toBe(0);
      // Both nodes took part, or this would say nothing about two of them.
      expect(t.app.webhooks.counts.delivered).toBeGreaterThan(0);
      expect(node.app.webhooks.counts.delivered).toBeGreaterThan(0);
      expect(t.app.webhooks.counts.delivered + node.app.webhooks.counts.delivered).toBe(run.receiver.received.length);
    } finally {
      await cleanUp(run);
      await node?.close();
      await t.close();
    }
  }, 60_000);

  it('a node that closes mid-run hands its endpoints over: nothing lost, nothing twice, order kept', async () => {
    // One endpoint per node at a time, so both nodes deliver and the second
    // is mid-run when it closes; leases of 20 + 10 s, so a takeover that had
    // to wait one out would miss the deadline below.
    const LEASE_MS = 30_000;
    const t = await buildTestApp({ webhooks: options(1, 20_000) });
    let node: Node | undefined;
    let run: Run | undefined;
    try {
      node = await secondNode(t, { webhooks: options(1, 20_000) });
      const leaving = node;
      const root2 = await signedInOn(leaving);
      run = await endpointsOn(t, ['/x', '/y', '/z'], 25);
      await writeOn([t.root, root2], 15, 'Before close');
      await expect
        .poll(() => leaving.app.webhooks.counts.delivered >= 3, { timeout: 30_000, interval: 25, message: 'the second node to deliver' })
        .toBe(true);
      // close() lets the delivery in flight finish and gives the lease back (docs/webhooks.md#delivery).
      const closing = Date.now();
      await leaving.close();
      node = undefined;
      expect(Date.now() - closing).toBeLessThan(5000);
      const byLeaving = leaving.app.webhooks.counts.delivered;
      await writeOn([t.root], 10, 'After close');
      await expectEachOnceInOrder(run);
      expect(Date.now() - closing, 'the leases were given back, not waited out').toBeLessThan(LEASE_MS);
      expect(leaving.app.webhooks.counts.delivered).toBe(byLeaving);
      expect(t.app.webhooks.counts.delivered + byLeaving).toBe(run.receiver.received.length);
      expect(t.app.webhooks.counts.failed + leaving.app.webhooks.counts.failed).toBe(0);
    } finally {
      await cleanUp(run);
      await node?.close();
      await t.close();
    }
  }, 60_000);
});
