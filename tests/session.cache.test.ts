import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { createSessionCache } from '../src/auth/session.cache.js';
import { buildTestApp, Client, createUserAndLogin, type TestApp } from './support/app.js';

// The session cache in front of findSession (src/auth/session.cache.ts):
// docs/security.md#sign-in-and-sessions at once on the node where a write happens, within 5 s elsewhere.

let t: TestApp;
let node2: FastifyInstance;

beforeAll(async () => {
  t = await buildTestApp();
  node2 = await buildApp({ sql: t.sql, config: { jwtSecret: undefined, tokenTtl: 7200, logLevel: 'silent' }, logger: false });
});
afterAll(async () => {
  await node2?.close();
  await t?.close();
});

const me = (client: Client) => client.get('/auth/me');

/** Polls until the token is refused; fails after 5 s. */
async function refusedWithin5s(client: Client): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const res = await me(client);
    if (res.status === 401) return;
    expect(Date.now(), 'token still accepted after 5 s').toBeLessThan(deadline);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A user signed in, with its token already cached on both nodes. */
async function cachedUser() {
  const user = await createUserAndLogin(t, t.root, '000000', 'user');
  const there = new Client(node2, user.client.token);
  expect((await me(user.client)).status).toBe(200);
  expect((await me(there)).status).toBe(200);
  return { ...user, there, base: { userId: user.userId, userName: user.userName, roles: ['user'] } };
}

describe('a cached session is refused', () => {
  it('after logout: at once here, within 5 s on another node', async () => {
    const user = await cachedUser();
    expect((await user.client.post('/auth/logout')).status).toBe(200);
    expect((await me(user.client)).status).toBe(401);
    await refusedWithin5s(user.there);
  });

  it('after the user is disabled: at once here, within 5 s on another node', async () => {
    const user = await cachedUser();
    expect((await t.root.put('/system/user-api', { ...user.base, status: '1' })).status).toBe(200);
    expect((await me(user.client)).status).toBe(401);
    await refusedWithin5s(user.there);
  });

  it('after a password change: at once here, within 5 s on another node', async () => {
    const user = await cachedUser();
    expect((await t.root.put('/system/user-api', { ...user.base, password: 'changed-password-7' })).status).toBe(200);
    expect((await me(user.client)).status).toBe(401);
    await refusedWithin5s(user.there);
  });

  it('after the user is deleted on the other node: at once there, within 5 s here', async () => {
    const user = await cachedUser();
    const rootThere = new Client(node2, t.root.token);
    expect((await rootThere.delete(`/system/user-api/${user.userId}`)).status).toBe(200);
    expect((await me(user.there)).status).toBe(401);
    await refusedWithin5s(user.client);
  });
});

describe('createSessionCache', () => {
  it('keeps a value for its lifetime only, shares concurrent loads, and drops loads a clear() overtook', async () => {
    let clock = 0;
    let loads = 0;
    const cache = createSessionCache<string>(1_000, () => clock);
    const load = async () => `v${++loads}`;
    const [a, b] = await Promise.all([cache.get('k', load), cache.get('k', load)]);
    expect([a, b, loads]).toEqual(['v1', 'v1', 1]);
    clock = 999;
    expect(await cache.get('k', load)).toBe('v1');
    clock = 1_000;
    expect(await cache.get('k', load)).toBe('v2');

    // A load that started before clear() answers its caller but is not kept.
    let release!: () => void;
    const slow = cache.get('s', () => new Promise<string>((resolve) => (release = () => resolve('stale'))));
    cache.clear();
    release();
    expect(await slow).toBe('stale');
    expect(await cache.get('s', async () => 'fresh')).toBe('fresh');
    // Refusals are not cached.
    expect(await cache.get('none', async () => undefined)).toBeUndefined();
    expect(await cache.get('none', async () => 'now')).toBe('now');
  });
});
