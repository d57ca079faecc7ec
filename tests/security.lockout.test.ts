import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, Client, createUserAndLogin, secondNode, type Node, type TestApp } from './support/app.js';

// docs/security.md#sign-in-and-sessions, the lockout under concurrency: however many attempts arrive
// at once, at most 5 wrong passwords per tenant+username are evaluated in a
// window; the rest get 429 without the password being checked, a right one
// included. And expired lock rows are purged, unknown usernames included.
// SQL only to age lock rows (ten minutes cannot pass in a test) and to look
// at the table.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

const loginOn = (app: FastifyInstance, username: string, password: string) =>
  new Client(app).post('/auth/login', { tenantId: '000000', username, password });

const countOf = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

async function lockRow(userName: string) {
  const [row] = await t.sql<{ failures: number }[]>`
    SELECT failures FROM login_lock WHERE tenant_id = '000000' AND user_name = ${userName}`;
  return row;
}

/**
 * Fires `wrong` wrong-password logins at once, spread over `apps`; once five
 * evaluations are reserved (or after 3 s, which the old code needed), while
 * the burst is still in flight, the right password is tried too.
 */
async function burst(apps: FastifyInstance[], user: { userName: string; password: string }, wrong = 50) {
  const pending = Array.from({ length: wrong }, (_, i) => loginOn(apps[i % apps.length]!, user.userName, `wrong-password-${i}`));
  const deadline = Date.now() + 3000;
  while (((await lockRow(user.userName))?.failures ?? 0) < 5 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const right = await loginOn(apps[0]!, user.userName, user.password);
  const statuses = (await Promise.all(pending)).map((r) => r.status);
  return { statuses, right };
}

function expectHeld({ statuses, right }: Awaited<ReturnType<typeof burst>>) {
  expect(countOf(statuses, 401)).toBeGreaterThanOrEqual(1);
  expect(countOf(statuses, 401)).toBeLessThanOrEqual(5);
  expect(countOf(statuses, 401) + countOf(statuses, 429)).toBe(statuses.length);
  expect(right.status).toBe(429);
  expect(right.body.msg).toMatch(/too many/i);
}

describe('lockout under concurrency', () => {
  it(`50 wrong passwords at once: at most 5 evaluated (401), the rest 429, and the right password is refused (${inject('databaseKind')})`, async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    expectHeld(await burst([t.app], user));
    // Still locked afterwards; other accounts are not.
    expect((await loginOn(t.app, user.userName, user.password)).status).toBe(429);
    expect((await t.root.get('/auth/me')).status).toBe(200);
  });

  it('unknown usernames are limited the same way', async () => {
    const ghost = { userName: `ghost_${Math.random().toString(36).slice(2, 10)}`, password: 'not-a-real-one' };
    const statuses = (await Promise.all(Array.from({ length: 30 }, () => loginOn(t.app, ghost.userName, 'wrong-password')))).map((r) => r.status);
    expect(countOf(statuses, 401)).toBeLessThanOrEqual(5);
    expect(countOf(statuses, 429)).toBeGreaterThanOrEqual(25);
  });

  it('a right password frees the reserved evaluations (a later wrong one is evaluated again)', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    for (let i = 0; i < 4; i++) expect((await loginOn(t.app, user.userName, 'wrong-password')).status).toBe(401);
    expect((await loginOn(t.app, user.userName, user.password)).status).toBe(200);
    expect(await lockRow(user.userName)).toBeUndefined();
    expect((await loginOn(t.app, user.userName, 'wrong-password')).status).toBe(401);
  });

  it('a lock that has run out opens a fresh window', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    for (let i = 0; i < 5; i++) await loginOn(t.app, user.userName, 'wrong-password');
    expect((await loginOn(t.app, user.userName, user.password)).status).toBe(429);
    await t.sql`
      UPDATE login_lock SET window_start = now() - interval '21 minutes', window_end = now() - interval '11 minutes', locked_until = now() - interval '1 minute'
      WHERE tenant_id = '000000' AND user_name = ${user.userName}`;
    expect((await loginOn(t.app, user.userName, user.password)).status).toBe(200);
  });

  describe.skipIf(!inject('databaseUrl'))('across two app instances on one PostgreSQL database', () => {
    let second: Node;
    beforeAll(async () => {
      second = await secondNode(t);
    });
    afterAll(async () => second?.close());

    it('50 wrong passwords split over both instances: at most 5 evaluated, the right one refused', async () => {
      const user = await createUserAndLogin(t, t.root, '000000', 'user');
      expectHeld(await burst([t.app, second.app], user));
      expect((await loginOn(second.app, user.userName, user.password)).status).toBe(429);
    });
  });
});

describe('expired lock rows are purged', () => {
  const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}_${i}_${Math.random().toString(36).slice(2, 8)}`);
  const present = async (userNames: string[]) =>
    (await t.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM login_lock WHERE user_name = ANY(${userNames}::text[])`)[0]!.n;

  it('a failed login removes expired rows of unknown usernames, in bounded batches, and keeps live ones', async () => {
    // Failures for names that exist nowhere, then their window runs out.
    const unknown = names('gone', 3);
    for (const name of unknown) expect((await loginOn(t.app, name, 'wrong-password')).status).toBe(401);
    expect(await present(unknown)).toBe(3);
    await t.sql`UPDATE login_lock SET window_start = now() - interval '11 minutes', window_end = now() - interval '1 minute' WHERE user_name = ANY(${unknown}::text[])`;
    // A lock still running and a window still open are kept.
    const [locked, open] = names('kept', 2) as [string, string];
    for (let i = 0; i < 5; i++) await loginOn(t.app, locked, 'wrong-password');
    await t.sql`UPDATE login_lock SET window_start = now() - interval '11 minutes', window_end = now() - interval '1 minute' WHERE user_name = ${locked}`;
    await loginOn(t.app, open, 'wrong-password');

    expect((await loginOn(t.app, names('trigger', 1)[0]!, 'wrong-password')).status).toBe(401);
    expect(await present(unknown)).toBe(0);
    expect(await present([locked, open])).toBe(2);
  });

  it('a backlog larger than one batch shrinks with every failure until it is gone', async () => {
    const backlog = names('old', 150);
    await t.sql`
      INSERT INTO login_lock (tenant_id, user_name, failures, window_start, window_end)
      SELECT '999999', n, 1, now() - interval '1 hour', now() - interval '50 minutes' FROM unnest(${backlog}::text[]) AS n`;
    await loginOn(t.app, names('trigger', 1)[0]!, 'wrong-password');
    const left = await present(backlog);
    expect(left).toBeLessThan(150);
    expect(left).toBeGreaterThan(0);
    await loginOn(t.app, names('trigger', 1)[0]!, 'wrong-password');
    expect(await present(backlog)).toBe(0);
  });
});
