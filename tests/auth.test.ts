import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import type { TokenClaims } from '../src/auth/auth.plugin.js';
import { today } from '../src/core/time.js';
import { ADMIN_PASSWORD, buildTestApp, Client, createdId, createUserAndLogin, secondNode, type TestApp } from './support/app.js';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';

// docs/security.md#sign-in-and-sessions and docs/api-rules.md#roles: login, tokens, their revocation, account and tenant state,
// roles and permissions, the shared JWT secret, tenant isolation. Everything
// through HTTP; SQL only to reach states no API sets yet (tenant status and
// service period) and to check what a refused call left behind.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

const login = (tenantId: string, username: string, password: string) => t.anon.post('/auth/login', { tenantId, username, password });

/** The JWT's payload, decoded without verifying. */
function claimsOf(token: string): TokenClaims & { iat: number; exp: number } {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
}

/** GET /auth/me with exactly this Authorization header (or none). */
async function me(authorization?: string, app = t.app) {
  const res = await app.inject({ method: 'GET', url: '/auth/me', headers: authorization === undefined ? {} : { authorization } });
  return { status: res.statusCode, body: res.json() };
}

async function expectRefused(client: Client, msg?: RegExp) {
  const res = await client.get('/auth/me');
  expect(res.status).toBe(401);
  expect(res.body.code).toBe(401);
  expect(res.body.data).toBeNull();
  if (msg) expect(res.body.msg).toMatch(msg);
  return res;
}

async function expectAccepted(client: Client) {
  const res = await client.get('/auth/me');
  expect(res.status).toBe(200);
  return res;
}

const uniqueName = (prefix: string) => `${prefix}_${Math.random().toString(36).slice(2, 10)}`;

async function userRow(tenantId: string, userId: number) {
  const [row] = await t.sql<{ status: string; delFlag: string; role: string }[]>`
    SELECT status, del_flag AS "delFlag", role FROM sys_user WHERE tenant_id = ${tenantId} AND user_id = ${userId}`;
  return row;
}

describe('login', () => {
  it('returns a Bearer token whose lifetime is TOKEN_TTL', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    const res = await login('000000', user.userName, user.password);
    expect(res.status).toBe(200);
    expect(res.body.code).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(['access_token', 'expires_in', 'token_type']);
    expect(res.body.data.token_type).toBe('Bearer');
    expect(res.body.data.expires_in).toBe(7200);
    const claims = claimsOf(res.body.data.access_token);
    expect(claims.exp - claims.iat).toBe(7200);
    expect(claims.tid).toBe('000000');
    expect(claims.sub).toBe(String(user.userId));
    // The session behind the token lives as long as the token.
    const [session] = await t.sql<{ seconds: number }[]>`
      SELECT extract(epoch FROM expires_at - now())::int AS seconds FROM auth_session
      WHERE tenant_id = '000000' AND session_id = ${claims.sid}`;
    expect(session!.seconds).toBeGreaterThan(7100);
    expect(session!.seconds).toBeLessThanOrEqual(7200);
    const who = await expectAccepted(new Client(t.app, res.body.data.access_token));
    expect(who.body.data.user.userName).toBe(user.userName);
  });

  it('gives unknown tenant, unknown user and wrong password the same 401', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    const replies = [
      await login('999999', user.userName, user.password),
      await login('000000', uniqueName('ghost'), user.password),
      await login('000000', user.userName, 'wrong-password-1'),
    ];
    for (const res of replies) {
      expect(res.status).toBe(401);
      expect(res.body.code).toBe(401);
      expect(res.body.data).toBeNull();
    }
    expect(new Set(replies.map((r) => r.body.msg)).size).toBe(1);
    expect(replies[0]!.body.msg.length).toBeGreaterThan(0);
  });

  it('answers 400 for a malformed login body', async () => {
    for (const body of [{}, { tenantId: '000000', username: 'admin' }, { tenantId: '0', username: 'admin', password: 'x' }]) {
      const res = await t.anon.post('/auth/login', body);
      expect(res.status).toBe(400);
    }
  });

  it('locks one tenant+username after 5 failed logins (429), not other usernames', async () => {
    const victim = await createUserAndLogin(t, t.root, '000000', 'user');
    const bystander = await createUserAndLogin(t, t.root, '000000', 'user');
    for (let i = 0; i < 5; i++) {
      const res = await login('000000', victim.userName, `wrong-password-${i}`);
      expect(res.status).toBe(401);
    }
    // Even the right password is refused now.
    const locked = await login('000000', victim.userName, victim.password);
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe(429);
    expect(locked.body.data).toBeNull();
    expect(locked.body.msg).toMatch(/too many/i);
    expect((await login('000000', victim.userName, victim.password)).status).toBe(429);
    const [lock] = await t.sql<{ locked: boolean }[]>`
      SELECT locked_until > now() + interval '9 minutes' AS locked FROM login_lock
      WHERE tenant_id = '000000' AND user_name = ${victim.userName}`;
    expect(lock?.locked).toBe(true);

    // Another username of the same tenant is unaffected.
    expect((await login('000000', bystander.userName, bystander.password)).status).toBe(200);
    // So is the same username in another tenant.
    const other = await createTenantWithAdmin(t);
    const twin = await other.admin.post('/system/user-api', { userName: victim.userName, password: victim.password, roles: ['user'] });
    createdId(twin);
    expect((await login(other.tenantId, victim.userName, victim.password)).status).toBe(200);
    // Tokens issued before the lock keep working: the lock is on logins.
    await expectAccepted(victim.client);
  });

  it('does not lock after 4 failures, and a successful login resets the count', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 4; i++) expect((await login('000000', user.userName, 'wrong-password-x')).status).toBe(401);
      expect((await login('000000', user.userName, user.password)).status).toBe(200);
    }
  });

  it('counts failures for unknown users too, so names cannot be probed freely', async () => {
    const ghost = uniqueName('ghost');
    for (let i = 0; i < 5; i++) expect((await login('000000', ghost, 'wrong-password-1')).status).toBe(401);
    expect((await login('000000', ghost, 'wrong-password-1')).status).toBe(429);
  });
});

describe('tokens refused with 401', () => {
  it('without an Authorization header', async () => {
    const res = await me();
    expect(res.status).toBe(401);
    expect(res.body.code).toBe(401);
    expect(res.body.msg).toMatch(/Authorization/);
    // And on a write, nothing happens.
    const write = await t.anon.post('/system/dept-api', { parentId: 0, deptName: 'Anonymous' });
    expect(write.status).toBe(401);
    const list = await t.root.get('/system/dept-api/list?deptName=Anonymous');
    expect(list.body.data).toEqual([]);
  });

  it('for "Bearer garbage"', async () => {
    expect((await me('Bearer garbage')).status).toBe(401);
    expect((await me('Bearer ')).status).toBe(401);
    expect((await me('Bearer a.b.c')).status).toBe(401);
  });

  it('for a scheme other than Bearer, even around a valid token', async () => {
    const token = t.root.token!;
    expect((await me(`Bearer ${token}`)).status).toBe(200);
    expect((await me(`Basic ${Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')}`)).status).toBe(401);
    expect((await me(`Token ${token}`)).status).toBe(401);
    expect((await me(token)).status).toBe(401);
  });

  it('for a tampered token (signature or payload) and an unsigned one', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    const token = user.client.token!;
    await expectAccepted(user.client);
    const [header, payload, signature] = token.split('.') as [string, string, string];

    // One character in the middle of the signature (the last one may only carry padding bits).
    const i = Math.floor(signature.length / 2);
    const flipped = signature.slice(0, i) + (signature[i] === 'A' ? 'B' : 'A') + signature.slice(i + 1);
    expect((await me(`Bearer ${header}.${payload}.${flipped}`)).status).toBe(401);

    // The payload pointing at the superadmin, signature kept.
    const claims = claimsOf(token);
    const rootClaims = claimsOf(t.root.token!);
    const forged = Buffer.from(JSON.stringify({ ...claims, sid: rootClaims.sid, sub: rootClaims.sub })).toString('base64url');
    expect((await me(`Bearer ${header}.${forged}.${signature}`)).status).toBe(401);

    // alg "none" with no signature.
    const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    expect((await me(`Bearer ${none}.${payload}.`)).status).toBe(401);

    // The untouched token still works: the refusals were for the tampering.
    await expectAccepted(user.client);
  });

  it('for an expired token', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    const { tid, sid, sub } = claimsOf(user.client.token!);
    const past = Math.floor(Date.now() / 1000) - 60;
    const expired = t.app.jwt.sign({ tid, sid, sub, iat: past } as TokenClaims, { expiresIn: 1 });
    expect(claimsOf(expired).exp).toBeLessThan(Date.now() / 1000);
    const res = await expectRefused(new Client(t.app, expired), /expired/);
    expect(res.body.msg).toMatch(/log in/i);
    // The same claims freshly signed are accepted: only the expiry differed.
    await expectAccepted(new Client(t.app, t.app.jwt.sign({ tid, sid, sub })));
  });

  it('for a valid JWT whose session has expired in the database', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    await expectAccepted(user.client);
    await t.sql`UPDATE auth_session SET expires_at = now() - interval '1 second' WHERE session_id = ${claimsOf(user.client.token!).sid}`;
    t.app.sessionCache.clear(); // a direct write: the session cache is told, as after a write through this node
    await expectRefused(user.client);
  });

  it('after POST /auth/logout, for that token only', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    const second = await t.login('000000', user.userName, user.password);
    const out = await user.client.post('/auth/logout');
    expect(out.status).toBe(200);
    expect(out.body.data).toBeNull();
    await expectRefused(user.client, /revoked/);
    expect((await user.client.post('/auth/logout')).status).toBe(401);
    // The user's other session is untouched, and the user can log in again.
    await expectAccepted(second);
    await expectAccepted(await t.login('000000', user.userName, user.password));
  });

  it('after the password is changed via PUT /system/user-api (every session), not after other edits', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    const second = await t.login('000000', user.userName, user.password);
    const base = { userId: user.userId, userName: user.userName, roles: ['user'] };

    // An edit without a password keeps the sessions.
    expect((await t.root.put('/system/user-api', { ...base, nickName: 'Renamed' })).status).toBe(200);
    await expectAccepted(user.client);
    await expectAccepted(second);

    expect((await t.root.put('/system/user-api', { ...base, password: 'new-password-9' })).status).toBe(200);
    await expectRefused(user.client);
    await expectRefused(second);
    expect((await login('000000', user.userName, user.password)).status).toBe(401);
    await expectAccepted(await t.login('000000', user.userName, 'new-password-9'));
  });

  it('after the user is disabled; login then answers 403 "disabled"; enabling restores it', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    const base = { userId: user.userId, userName: user.userName, roles: ['user'] };
    expect((await t.root.put('/system/user-api', { ...base, status: '1' })).status).toBe(200);
    expect((await userRow('000000', user.userId))?.status).toBe('1');
    await expectRefused(user.client, /disabled/);

    const refused = await login('000000', user.userName, user.password);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe(403);
    expect(refused.body.msg).toMatch(/user.*disabled/i);
    expect(refused.body.data).toBeNull();
    // A wrong password still gets the anonymous 401, so the state is not disclosed.
    const wrong = await login('000000', user.userName, 'wrong-password-1');
    expect(wrong.status).toBe(401);
    expect(wrong.body.msg).toBe((await login('999999', 'nobody', 'whatever-1')).body.msg);

    expect((await t.root.put('/system/user-api', { ...base, status: '0' })).status).toBe(200);
    await expectAccepted(await t.login('000000', user.userName, user.password));
  });

  it('after the user is deleted; login then answers 403 "deleted"', async () => {
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    expect((await t.root.delete(`/system/user-api/${user.userId}`)).status).toBe(200);
    expect((await userRow('000000', user.userId))?.delFlag).toBe('2');
    await expectRefused(user.client, /deleted/);

    const refused = await login('000000', user.userName, user.password);
    expect(refused.status).toBe(403);
    expect(refused.body.msg).toMatch(/user.*deleted/i);
    expect((await login('000000', user.userName, 'wrong-password-1')).status).toBe(401);

    // A new live user of the same name wins over the deleted one.
    createdId(await t.root.post('/system/user-api', { userName: user.userName, password: 'another-password', roles: ['user'] }));
    expect((await login('000000', user.userName, 'another-password')).status).toBe(200);
    expect((await login('000000', user.userName, user.password)).status).toBe(401);
  });
});

describe('token lifetime', () => {
  let short: TestApp;
  beforeAll(async () => {
    short = await buildTestApp({ tokenTtl: 1 });
  });
  afterAll(async () => short?.close());

  it('expires_in follows TOKEN_TTL and the token is refused once it has passed', async () => {
    const res = await short.anon.post('/auth/login', { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body.data.expires_in).toBe(1);
    const token: string = res.body.data.access_token;
    const claims = claimsOf(token);
    expect(claims.exp - claims.iat).toBe(1);
    // Until just past the expiry it carries (at most 1 s from now), as in the next test.
    await new Promise((resolve) => setTimeout(resolve, claims.exp * 1000 + 50 - Date.now()));
    const after = await new Client(short.app, token).get('/auth/me');
    expect(after.status).toBe(401);
    expect(after.body.msg).toMatch(/expired/);
  });

  it('a token used a moment ago, still in the session cache, is refused once its expiry has passed', async () => {
    // Log in just after a second starts, so the 1 s token is good for most of a second.
    while (Date.now() % 1000 > 100) await new Promise((resolve) => setTimeout(resolve, 10));
    const res = await short.anon.post('/auth/login', { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD });
    const token: string = res.body.data.access_token;
    const client = new Client(short.app, token);
    expect((await client.get('/auth/me')).status).toBe(200); // now cached for 2 s
    await new Promise((resolve) => setTimeout(resolve, claimsOf(token).exp * 1000 + 50 - Date.now()));
    const after = await client.get('/auth/me');
    expect(after.status).toBe(401);
    expect(after.body.msg).toMatch(/expired/);
  });
});

describe('tenant state', () => {
  const cases = [
    {
      state: 'disabled',
      set: (id: string) => t.sql`UPDATE sys_tenant SET status = '1' WHERE tenant_id = ${id}`,
      reset: (id: string) => t.sql`UPDATE sys_tenant SET status = '0' WHERE tenant_id = ${id}`,
      msg: /tenant.*disabled/i,
    },
    {
      state: 'expired',
      set: (id: string) => t.sql`UPDATE sys_tenant SET end_time = '2000-01-01' WHERE tenant_id = ${id}`,
      reset: (id: string) => t.sql`UPDATE sys_tenant SET end_time = NULL WHERE tenant_id = ${id}`,
      msg: /ended on 2000-01-01/,
    },
    {
      state: 'not yet started',
      set: (id: string) => t.sql`UPDATE sys_tenant SET start_time = '2999-01-01' WHERE tenant_id = ${id}`,
      reset: (id: string) => t.sql`UPDATE sys_tenant SET start_time = NULL WHERE tenant_id = ${id}`,
      msg: /starts on 2999-01-01/,
    },
    {
      state: 'deleted',
      set: (id: string) => t.sql`UPDATE sys_tenant SET del_flag = '2' WHERE tenant_id = ${id}`,
      reset: (id: string) => t.sql`UPDATE sys_tenant SET del_flag = '0' WHERE tenant_id = ${id}`,
      msg: /tenant.*deleted/i,
    },
  ];

  it.each(cases)('a $state tenant: tokens 401, login 403 saying so, restoring it restores login', async ({ set, reset, msg }) => {
    const tenant = await createTenantWithAdmin(t);
    const user = await createUserAndLogin(t, tenant.admin, tenant.tenantId, 'user');
    await expectAccepted(tenant.admin);

    await set(tenant.tenantId);
    t.app.sessionCache.clear(); // a direct write: the session cache is told, as after a write through this node
    await expectRefused(tenant.admin, msg);
    await expectRefused(user.client, msg);
    const refused = await login(tenant.tenantId, user.userName, user.password);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe(403);
    expect(refused.body.msg).toMatch(msg);
    // Wrong password: the same anonymous 401 as ever.
    expect((await login(tenant.tenantId, user.userName, 'wrong-password-1')).status).toBe(401);

    await reset(tenant.tenantId);
    await expectAccepted(await t.login(tenant.tenantId, user.userName, user.password));
  });

  it('a service period that starts and ends today admits logins', async () => {
    const tenant = await createTenantWithAdmin(t);
    const user = await createUserAndLogin(t, tenant.admin, tenant.tenantId, 'user');
    await t.sql`UPDATE sys_tenant SET start_time = ${today()}, end_time = ${today()} WHERE tenant_id = ${tenant.tenantId}`;
    await expectAccepted(user.client);
    await expectAccepted(await t.login(tenant.tenantId, user.userName, user.password));
  });
});

describe('GET /auth/me', () => {
  it('returns user, tenant, roles and permissions of each role', async () => {
    const tenant = await createTenantWithAdmin(t);
    const [row] = await t.sql<{ id: string; companyName: string }[]>`
      SELECT id::text AS id, company_name AS "companyName" FROM sys_tenant WHERE tenant_id = ${tenant.tenantId}`;

    const admin = await tenant.admin.get('/auth/me');
    expect(admin.status).toBe(200);
    expect(admin.body.data.user.userName).toBe(tenant.username);
    expect(admin.body.data.user.deptId).toBe(tenant.rootDeptId);
    expect(admin.body.data.tenant).toEqual({
      id: row!.id,
      tenantId: tenant.tenantId,
      tenantName: tenant.tenant.tenantName,
      companyName: row!.companyName,
    });
    expect(admin.body.data.roles).toEqual(['admin']);
    expect(admin.body.data.permissions).toEqual(expect.arrayContaining(['system:dept:add', 'system:dept:remove', 'system:user:add']));

    const user = await createUserAndLogin(t, tenant.admin, tenant.tenantId, 'user', { nickName: 'Plain', deptId: tenant.rootDeptId });
    const plain = await user.client.get('/auth/me');
    expect(plain.status).toBe(200);
    expect(plain.body.data.user).toEqual({ userId: user.userId, userName: user.userName, nickName: 'Plain', deptId: tenant.rootDeptId });
    expect(plain.body.data.tenant.tenantId).toBe(tenant.tenantId);
    expect(plain.body.data.roles).toEqual(['user']);
    expect(plain.body.data.permissions).toEqual(expect.arrayContaining(['system:dept:list', 'system:dept:query']));
    for (const p of ['system:dept:add', 'system:dept:edit', 'system:dept:remove', 'system:user:list', 'system:user:add']) {
      expect(plain.body.data.permissions).not.toContain(p);
    }

    const root = await t.root.get('/auth/me');
    expect(root.body.data.user.userName).toBe('admin');
    expect(root.body.data.tenant.tenantId).toBe('000000');
    expect(root.body.data.roles).toEqual(['superadmin']);
    expect(root.body.data.permissions).toContain('system:dept:add');
  });
});

describe('roles', () => {
  it('a user reads departments but cannot write them', async () => {
    const tenant = await createTenantWithAdmin(t);
    const user = await createUserAndLogin(t, tenant.admin, tenant.tenantId, 'user');
    const deptId = createdId(await tenant.admin.post('/system/dept-api', { parentId: tenant.rootDeptId, deptName: 'Sales' }));

    const list = await user.client.get('/system/dept-api/list');
    expect(list.status).toBe(200);
    expect(list.body.data.map((d: { deptId: number }) => d.deptId)).toEqual(expect.arrayContaining([tenant.rootDeptId, deptId]));
    const tree = await user.client.get('/system/dept-api/tree');
    expect(tree.status).toBe(200);
    expect(tree.body.data[0].children.map((d: { deptId: number }) => d.deptId)).toContain(deptId);
    expect((await user.client.get(`/system/dept-api/${deptId}`)).status).toBe(200);

    const create = await user.client.post('/system/dept-api', { parentId: tenant.rootDeptId, deptName: 'ByUser' });
    expect(create.status).toBe(403);
    expect(create.body.code).toBe(403);
    expect((await tenant.admin.get('/system/dept-api/list?deptName=ByUser')).body.data).toEqual([]);

    const update = await user.client.put('/system/dept-api', { deptId, parentId: tenant.rootDeptId, deptName: 'Renamed' });
    expect(update.status).toBe(403);
    expect((await tenant.admin.get(`/system/dept-api/${deptId}`)).body.data.deptName).toBe('Sales');

    const remove = await user.client.delete(`/system/dept-api/${deptId}`);
    expect(remove.status).toBe(403);
    expect((await tenant.admin.get(`/system/dept-api/${deptId}`)).status).toBe(200);
  });

  it('a user gets 403 on every /system/user-api route, its own record included', async () => {
    const tenant = await createTenantWithAdmin(t);
    const user = await createUserAndLogin(t, tenant.admin, tenant.tenantId, 'user');
    const other = await createUserAndLogin(t, tenant.admin, tenant.tenantId, 'user');
    const name = uniqueName('byuser');

    const replies = [
      await user.client.get('/system/user-api/list'),
      await user.client.get(`/system/user-api/${other.userId}`),
      await user.client.get(`/system/user-api/${user.userId}`),
      await user.client.post('/system/user-api', { userName: name, password: 'password-123', roles: ['admin'] }),
      await user.client.put('/system/user-api', { userId: user.userId, userName: user.userName, roles: ['admin'] }),
      await user.client.put('/system/user-api', { userId: other.userId, userName: other.userName, roles: ['user'], status: '1' }),
      await user.client.delete(`/system/user-api/${other.userId}`),
    ];
    for (const res of replies) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe(403);
      expect(res.body.data).toBeNull();
    }
    // Nothing changed.
    expect((await tenant.admin.get(`/system/user-api/list?userName=${name}`)).body.data).toEqual([]);
    expect(await userRow(tenant.tenantId, user.userId)).toMatchObject({ role: 'user', status: '0', delFlag: '0' });
    expect(await userRow(tenant.tenantId, other.userId)).toMatchObject({ role: 'user', status: '0', delFlag: '0' });
    expect((await user.client.get('/auth/me')).body.data.roles).toEqual(['user']);
  });

  it('a role change takes effect on tokens already issued', async () => {
    const tenant = await createTenantWithAdmin(t);
    const admin2 = await createUserAndLogin(t, tenant.admin, tenant.tenantId, 'admin');
    expect((await admin2.client.get('/system/user-api/list')).status).toBe(200);
    const demote = await tenant.admin.put('/system/user-api', { userId: admin2.userId, userName: admin2.userName, roles: ['user'] });
    expect(demote.status).toBe(200);
    expect((await admin2.client.get('/system/user-api/list')).status).toBe(403);
    expect((await admin2.client.post('/system/dept-api', { parentId: tenant.rootDeptId, deptName: 'AfterDemotion' })).status).toBe(403);
    expect((await tenant.admin.get('/system/dept-api/list?deptName=AfterDemotion')).body.data).toEqual([]);
  });
});

describe('JWT secret', () => {
  it('when JWT_SECRET is unset, the generated secret is kept in the database and shared by every node', async () => {
    const [setting] = await t.sql<{ value: string }[]>`SELECT value FROM app_setting WHERE key = 'jwt_secret'`;
    expect(setting?.value.length).toBeGreaterThanOrEqual(32);

    const second = await secondNode(t);
    const node2 = second.app;
    try {
      // A token from node 1 works on node 2, and the other way round.
      await expectAccepted(new Client(node2, t.root.token));
      const user = await createUserAndLogin(t, t.root, '000000', 'user');
      const res = await new Client(node2).post('/auth/login', { tenantId: '000000', username: user.userName, password: user.password });
      expect(res.status).toBe(200);
      const fromNode2 = new Client(t.app, res.body.data.access_token);
      await expectAccepted(fromNode2);
      // A logout on node 1 is honoured by node 2.
      const onNode2 = new Client(node2, res.body.data.access_token);
      await expectAccepted(onNode2);
      expect((await fromNode2.post('/auth/logout')).status).toBe(200);
      // Node 2 may serve its cached session for a moment (docs/security.md#sign-in-and-sessions: within 5 s).
      for (let waited = 0; (await onNode2.get('/auth/me')).status === 200 && waited < 5_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await expectRefused(onNode2);
      // The stored secret did not change.
      const [after] = await t.sql<{ value: string }[]>`SELECT value FROM app_setting WHERE key = 'jwt_secret'`;
      expect(after?.value).toBe(setting?.value);
    } finally {
      await second.close();
    }
  });

  it('a node with another explicit JWT_SECRET refuses the tokens, and its tokens are refused here', async () => {
    const other = await buildApp({ sql: t.appSql, config: { jwtSecret: 'x'.repeat(48), tokenTtl: 7200, logLevel: 'silent' }, logger: false });
    try {
      await expectRefused(new Client(other, t.root.token));
      // The same live session, signed with the other secret, is refused by this node.
      const res = await new Client(other).post('/auth/login', { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD });
      expect(res.status).toBe(200);
      await expectAccepted(new Client(other, res.body.data.access_token));
      await expectRefused(new Client(t.app, res.body.data.access_token));
    } finally {
      await other.close();
    }
  });
});

describe('tenant isolation', () => {
  it("another tenant's admin cannot see or touch this tenant's departments", async () => {
    const deptId = createdId(await t.root.post('/system/dept-api', { parentId: 0, deptName: uniqueName('Platform') }));
    const b = await createTenantWithAdmin(t);

    const get = await b.admin.get(`/system/dept-api/${deptId}`);
    expect(get.status).toBe(404);
    expect(get.body.code).toBe(404);
    const list = await b.admin.get('/system/dept-api/list');
    expect(list.body.data.map((d: { deptId: number }) => d.deptId)).not.toContain(deptId);
    expect(list.body.data.every((d: { tenantId: string }) => d.tenantId === b.tenantId)).toBe(true);

    const put = await b.admin.put('/system/dept-api', { deptId, parentId: 0, deptName: 'Stolen' });
    expect(put.status).toBe(404);
    expect((await b.admin.delete(`/system/dept-api/${deptId}`)).status).toBe(404);
    const still = await t.root.get(`/system/dept-api/${deptId}`);
    expect(still.status).toBe(200);
    expect(still.body.data.deptName).not.toBe('Stolen');
  });

  it('a token claiming another tenant with its own session id is refused', async () => {
    const b = await createTenantWithAdmin(t);
    const { sid, sub } = claimsOf(b.admin.token!);
    const forged = t.app.jwt.sign({ tid: '000000', sid, sub });
    await expectRefused(new Client(t.app, forged));
    await expectAccepted(b.admin);
  });
});
