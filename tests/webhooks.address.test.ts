import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './support/app.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import { parseAllowedCidrs } from '../src/outbound/outbound.address.js';
import { purgeAudit } from '../src/audit/audit.retention.js';

// The address rule (docs/webhooks.md#addresses) and cursor expiry, on a
// service whose OUTBOUND_ALLOWED_CIDRS lets in 10.0.0.0/8 only: loopback is
// then refused like any non-public address, also behind a hostname (the
// check runs on the address the socket connects to), and http:// is allowed
// to the listed block alone. A loopback receiver listens, and must never be
// reached.

const API = '/system/webhook-api';

let t: TestApp;
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  t = await buildTestApp({
    webhooks: { allowed: parseAllowedCidrs('10.0.0.0/8'), timeoutMs: 1000, retrySchedule: [30], pollMs: 100, maintenanceMs: 200 },
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe('the address rule', () => {
  it('refuses an IP literal that is not public when the endpoint is saved, in every spelling', async () => {
    for (const url of [
      'https://127.0.0.1/hook',
      'https://[::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://[::ffff:7f00:1]/hook',
      'https://[::127.0.0.1]/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://192.168.1.10/hook',
      'https://172.16.0.1/hook',
      'https://[fd00::1]/hook',
      'https://[fe80::1]/hook',
      'https://0.0.0.0/hook',
      'https://100.64.0.1/hook',
      'http://203.0.113.7/hook',
    ]) {
      const res = await t.root.post(API, { url });
      expect(res.status, url).toBe(400);
      expect(res.body.msg, url).toMatch(/url refused: address .* (is not public|is not in OUTBOUND_ALLOWED_CIDRS)/);
    }
    // Inside the allowed block, http:// is accepted too.
    const ok = await t.root.post(API, { url: 'http://10.1.2.3:9/hook', events: ['nothing.matches'] });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    await t.root.delete(`${API}/${ok.body.data.id}`);
    expect(receiver.received).toHaveLength(0);
  });

  it('refuses the connection when a hostname resolves to loopback: the address connected to is judged, and the attempt is logged', async () => {
    const plain = await t.root.post(API, { url: `http://localhost:${receiver.port}/plain`, events: ['dept.create'] });
    const tls = await t.root.post(API, { url: `https://localhost:${receiver.port}/tls`, events: ['dept.create'] });
    expect(plain.status, JSON.stringify(plain.body)).toBe(200);
    expect(tls.status, JSON.stringify(tls.body)).toBe(200);

    const tested = await t.root.post(`${API}/${plain.body.data.id}/test`);
    expect(tested.status).toBe(200);
    expect(tested.body.data.status).toBeNull();
    expect(tested.body.data.body).toMatch(/localhost: address (127\.0\.0\.1|::1) is not in OUTBOUND_ALLOWED_CIDRS/);
    const tlsTested = await t.root.post(`${API}/${tls.body.data.id}/test`);
    expect(tlsTested.body.data.body).toMatch(/localhost: address (127\.0\.0\.1|::1) is not public/);

    expect((await t.root.post('/system/dept-api', { parentId: 0, deptName: 'Never delivered' })).status).toBe(200);
    for (const id of [plain.body.data.id, tls.body.data.id]) {
      await expect.poll(async () => (await t.root.get(`${API}/${id}`)).body.data.failures, { timeout: 30_000 }).toBe(1);
      const log = (await t.root.get(`${API}/${id}/deliveries`)).body.data.rows;
      expect(log[0]).toMatchObject({ attempt: 1, statusCode: null });
      expect(log[0].error).toMatch(/not (public|in OUTBOUND_ALLOWED_CIDRS)/);
      const endpoint = (await t.root.get(`${API}/${id}`)).body.data;
      expect(endpoint.lastError).toMatch(/not (public|in OUTBOUND_ALLOWED_CIDRS)/);
      // The next attempt waits for the schedule's first step (30 s).
      expect(endpoint.nextAttemptTime).toBeTruthy();
      await t.root.delete(`${API}/${id}`);
    }
    expect(receiver.received).toHaveLength(0);
  });
});

describe('retention', () => {
  it('disables an endpoint whose undelivered records were purged ("cursor expired"), with an audit record, instead of skipping them', async () => {
    const made = await t.root.post(API, { url: `http://localhost:${receiver.port}/expiring`, events: ['dept.create'] });
    expect(made.status).toBe(200);
    const id = made.body.data.id;
    expect((await t.root.post('/system/dept-api', { parentId: 0, deptName: 'Purged before delivery' })).status).toBe(200);
    // The attempt fails (loopback is refused here), so the record stays pending behind the cursor.
    await expect.poll(async () => (await t.root.get(`${API}/${id}`)).body.data.failures, { timeout: 30_000 }).toBe(1);
    expect((await t.root.get(`${API}/${id}`)).body.data.status).toBe('0');

    // The real retention purge, on records made to look 400 days old.
    await t.sql`UPDATE audit_log SET time = now() - interval '400 days' WHERE position IS NOT NULL`;
    expect(await purgeAudit(t.appSql, 365)).toBeGreaterThan(0);

    await expect.poll(async () => (await t.root.get(`${API}/${id}`)).body.data.status, { timeout: 30_000 }).toBe('1');
    expect((await t.root.get(`${API}/${id}`)).body.data.disabledReason).toBe('cursor expired');
    const disabled = (await t.root.get(`/system/audit-api/list?action=webhook.disabled&entityId=${id}`)).body.data.rows;
    expect(disabled).toHaveLength(1);
    expect(disabled[0].changes.reason).toBe('cursor expired');

    // Enabled again, it is never sent the record after the gap: it is disabled again, with nothing attempted.
    const endpoint = (await t.root.get(`${API}/${id}`)).body.data;
    const attempts = (await t.root.get(`${API}/${id}/deliveries`)).body.data.total;
    expect((await t.root.put(API, { id, url: endpoint.url, events: endpoint.events, description: '', status: '0' })).status).toBe(200);
    expect((await t.root.post('/system/dept-api', { parentId: 0, deptName: 'After the gap' })).status).toBe(200);
    await expect.poll(async () => (await t.root.get(`${API}/${id}`)).body.data.status, { timeout: 30_000 }).toBe('1');
    expect((await t.root.get(`${API}/${id}`)).body.data.disabledReason).toBe('cursor expired');
    expect((await t.root.get(`${API}/${id}/deliveries`)).body.data.total).toBe(attempts);

    // A replay from 0 starts at the oldest record retention kept.
    expect((await t.root.post(`${API}/${id}/replay`, { after: '0' })).status).toBe(200);
    const [oldest] = await t.sql<{ min: string }[]>`SELECT (min(position) - 1)::text AS min FROM audit_log WHERE position IS NOT NULL`;
    expect((await t.root.get(`${API}/${id}`)).body.data.cursor).toBe(oldest!.min);
  });

  it('leaves alone an endpoint that is merely idle: its filter matched nothing, and its cursor follows the feed', async () => {
    const made = await t.root.post(API, { url: `http://localhost:${receiver.port}/idle`, events: ['tenant.delete'] });
    const id = made.body.data.id;
    for (let i = 0; i < 3; i++) expect((await t.root.post('/system/dept-api', { parentId: 0, deptName: `Idle ${i}` })).status).toBe(200);
    await t.root.get('/system/audit-api/changes?limit=1');
    const [feed] = await t.sql<{ last: string }[]>`SELECT last_position::text AS last FROM audit_feed`;
    await expect.poll(async () => (await t.root.get(`${API}/${id}`)).body.data.cursor, { timeout: 30_000 }).toBe(feed!.last);
    await t.sql`UPDATE audit_log SET time = now() - interval '400 days' WHERE position IS NOT NULL`;
    await purgeAudit(t.appSql, 365);
    await new Promise((r) => setTimeout(r, 600));
    expect((await t.root.get(`${API}/${id}`)).body.data).toMatchObject({ status: '0', disabledReason: null });
  });
});
