import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { openPostgres, type Database } from '../src/db/database.js';
import { parseAllowedCidrs } from '../src/outbound/outbound.address.js';
import { ADMIN_PASSWORD } from './support/app.js';
import { cutDatabase, type CutProxy } from './support/cut-proxy.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

// docs/webhooks.md#delivery with a real fault: the statement that writes a
// run's acknowledgements (the cursor, the attempt log, the lease) has its
// connection cut before it reaches the server, while the run goes on
// sending. The run stops, nothing is lost (the records whose 2xx was not
// written are sent again, same webhook-id, once the lease runs out), order
// holds, and the app still closes: a failed write must not leave the run
// waiting for it. PostgreSQL only: the embedded database lives inside the
// process, with no connection to cut.

const ADVANCE = /UPDATE webhook_endpoint w SET cursor =/;
const CREATES = 6;

describe.skipIf(!inject('databaseUrl'))('a run whose acknowledgement write is cut', () => {
  let db: Awaited<ReturnType<typeof cutDatabase>>;
  let proxy: CutProxy;
  let viaProxy: Database;
  let app: FastifyInstance | undefined;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    db = await cutDatabase(inject('databaseUrl'), inject('templateDatabase'), 'hookcut');
    proxy = db.proxy;
    viaProxy = openPostgres(db.proxied, { max: 4 });
    receiver = await WebhookReceiver.start();
    app = await buildApp({
      sql: viaProxy.sql,
      config: { jwtSecret: undefined, tokenTtl: 600, logLevel: 'silent' },
      logger: false,
      // A lease lasts the timeout (1 s) plus 10 s: the resend comes within about 11 s of the cut.
      webhooks: { allowed: parseAllowedCidrs('127.0.0.0/8'), timeoutMs: 1000, pollMs: 100 },
    });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await viaProxy?.close();
    await receiver?.close();
    await db?.drop();
  });

  it('sends every record again from the written cursor, in order, and the app still closes', async () => {
    const login = await app!.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD },
    });
    const headers = { authorization: `Bearer ${login.json().data.access_token}` };
    const made = await app!.inject({
      method: 'POST',
      url: '/system/webhook-api',
      headers,
      payload: { url: receiver.url('/cut'), events: ['dept.create'] },
    });
    expect(made.statusCode).toBe(200);
    const endpoint = made.json().data as { id: number; url: string; events: string[]; description: string };
    const status = async (value: '0' | '1') => {
      const { id, url, events, description } = endpoint;
      const res = await app!.inject({ method: 'PUT', url: '/system/webhook-api', headers, payload: { id, url, events, description, status: value } });
      expect(res.statusCode).toBe(200);
    };
    // Disabled while the records are written, then enabled: one run then reads them all in its first batch, and
    // sends the second while the write of the first one's 2xx fails (answers slow enough for that to be so).
    await status('1');
    for (let i = 0; i < CREATES; i++) {
      const res = await app!.inject({ method: 'POST', url: '/system/dept-api', headers, payload: { parentId: 0, deptName: `Cut ${i}` } });
      expect(res.statusCode).toBe(200);
    }
    receiver.answer = () => ({ status: 204, delayMs: 150 });
    const cut = proxy.cutAt({ sql: ADVANCE, when: 'before', how: 'reset' });
    await status('0');
    const ids = () => receiver.received.map((r) => String(r.headers['webhook-id']));
    const firstArrivals = () => [...new Set(ids())];
    await expect.poll(() => firstArrivals().length, { timeout: 30_000, interval: 100 }).toBe(CREATES);
    expect(cut.hits(), 'the acknowledgement write was cut').toBe(1);
    // Feed order of first arrival; the records sent again are the first ones, whose 2xx was never written.
    const positions = firstArrivals().map((id) => Number(id.replace('audit_', '')));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    const repeated = ids().filter((id, i) => ids().indexOf(id) !== i);
    // The first (its write cut) is sent again, and the second too when it was sent while that write failed
    // (on a slow machine the run may not have reached it yet); nothing after them, and in feed order.
    expect(repeated.length).toBeGreaterThanOrEqual(1);
    expect(repeated.length).toBeLessThanOrEqual(2);
    expect(repeated).toEqual(firstArrivals().slice(0, repeated.length));

    // The cursor reaches the last record, written by the run that resumed.
    const cursor = async () =>
      (await app!.inject({ method: 'GET', url: `/system/webhook-api/${endpoint.id}`, headers })).json().data.cursor as string;
    await expect.poll(cursor, { timeout: 5_000 }).toBe(String(positions.at(-1)));

    // And the app closes: nothing waits for the write that failed.
    const closing = app!.close();
    app = undefined;
    const closed = await Promise.race([closing.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still closing after 10 s'), 10_000))]);
    expect(closed).toBe('closed');
  }, 60_000);
});
