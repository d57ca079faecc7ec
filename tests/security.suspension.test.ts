import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildTestApp, createUserAndLogin, type Client, type TestApp } from './support/app.js';
import { dayFromToday, createTenantWithAdmin, readTenant, tenantBody, writable, type TenantWithAdmin } from './support/tenant-fixtures.js';

// docs/security.md#sign-in-and-sessions: a tenant's users log in and act only while their tenant and
// every ancestor tenant are live, enabled and inside their service periods;
// the login's 403 names the tenant that is the cause. Disabling or deleting a
// user or a tenant revokes the sessions issued before it, for good.
// Everything through HTTP, on a chain A > B > C under the platform tenant.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

const BASE = '/system/tenant-api';

const loginAs = (p: TenantWithAdmin) => t.anon.post('/auth/login', { tenantId: p.tenant.tenantId, username: p.username, password: p.password });

/** PUT the tenant's current state with `patch`, as `as` (an ancestor's admin). */
async function change(as: Client, p: TenantWithAdmin, patch: Record<string, unknown>) {
  const res = await as.put(BASE, { ...writable(await readTenant(t.root, p.tenant.id)), ...patch });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

interface Chain {
  a: TenantWithAdmin;
  b: TenantWithAdmin;
  c: TenantWithAdmin;
  /** A plain user of C, signed in. */
  cUser: { client: Client; userName: string; password: string };
}

/** A > B > C, each with its admin signed in, plus a user in C. */
async function chain(): Promise<Chain> {
  const a = await createTenantWithAdmin(t);
  const b = await createTenantWithAdmin(t, a.admin);
  const c = await createTenantWithAdmin(t, b.admin);
  const cUser = await createUserAndLogin(t, c.admin, c.tenant.tenantId, 'user');
  return { a, b, c, cUser };
}

async function expectLoginNames(p: TenantWithAdmin, cause: TenantWithAdmin) {
  const res = await loginAs(p);
  expect(res.status, JSON.stringify(res.body)).toBe(403);
  expect(res.body.data).toBeNull();
  expect(res.body.msg).toContain(cause.tenant.tenantId);
  expect(res.body.msg).toContain(cause.tenant.tenantName);
}

async function expectTokenRefused(client: Client) {
  const res = await client.get('/auth/me');
  expect(res.status).toBe(401);
  expect(res.body.data).toBeNull();
}

/** A sub-tenant create by this admin is refused and leaves nothing behind. */
async function expectNoSubTenant(client: Client) {
  const body = tenantBody();
  expect((await client.post(BASE, body)).status).toBe(401);
  const found = await t.root.get(`${BASE}/list?tenantName=${encodeURIComponent(String(body.tenantName))}`);
  expect(found.body.data.total).toBe(0);
}

const suspensions = [
  { how: 'disable', suspend: { status: '1' }, lift: { status: '0' }, reason: /disabled/ },
  { how: 'expiry (endTime in the past)', suspend: { endTime: dayFromToday(-1) }, lift: { endTime: null }, reason: /ended on/ },
];

describe.each(suspensions)('suspension of A by $how reaches B and C', ({ suspend, lift, reason }) => {
  it('B and C cannot log in (403 naming A), their tokens are refused, they create nothing; lifting it admits new logins only', async () => {
    const { a, b, c, cUser } = await chain();
    await change(t.root, a, suspend);

    // The cause, A, is named at every level below it, and A's own login says so too.
    await expectLoginNames(c, a);
    await expectLoginNames(b, a);
    await expectLoginNames(a, a);
    const refused = await t.anon.post('/auth/login', { tenantId: c.tenant.tenantId, username: cUser.userName, password: cUser.password });
    expect(refused.status).toBe(403);
    expect(refused.body.msg).toMatch(reason);

    for (const client of [a.admin, b.admin, c.admin, cUser.client]) await expectTokenRefused(client);
    const token = await c.admin.get('/auth/me');
    expect(token.body.msg).toContain(a.tenant.tenantId);
    await expectNoSubTenant(b.admin);
    await expectNoSubTenant(c.admin);
    // The platform above A is untouched.
    expect((await t.root.get('/auth/me')).status).toBe(200);

    await change(t.root, a, lift);
    // Tokens from before the suspension stay refused; new logins work and act.
    for (const client of [a.admin, b.admin, c.admin, cUser.client]) await expectTokenRefused(client);
    const cAdmin = await t.login(c.tenant.tenantId, c.username, c.password);
    expect((await cAdmin.post(BASE, tenantBody())).status).toBe(200);
    expect((await (await t.login(b.tenant.tenantId, b.username, b.password)).get('/auth/me')).status).toBe(200);
    expect((await loginAs(a)).status).toBe(200);
  });
});

describe('suspension details', () => {
  it('an expiry that nobody wrote (the period simply ran out) refuses tokens at once; the update extending it does not revive them', async () => {
    const { a, c } = await chain();
    // Time passing is no API call: the end date is moved by SQL.
    await t.sql`UPDATE sys_tenant SET end_time = ${dayFromToday(-1)}::date WHERE tenant_id = ${a.tenant.tenantId}`;
    // Real time passing starts a new day, which is a new session-cache key; the SQL stand-in says so explicitly.
    t.app.sessionCache.clear();
    const res = await c.admin.get('/auth/me');
    expect(res.status).toBe(401);
    expect(res.body.msg).toContain(a.tenant.tenantId);
    expect(res.body.msg).toMatch(/ended on/);

    await change(t.root, a, { endTime: dayFromToday(30) });
    await expectTokenRefused(c.admin);
    expect((await (await t.login(c.tenant.tenantId, c.username, c.password)).get('/auth/me')).status).toBe(200);
  });

  it("with A and B both disabled, C's login names the nearest one, B", async () => {
    const { a, b, c } = await chain();
    await change(t.root, a, { status: '1' });
    await change(t.root, b, { status: '1' });
    await expectLoginNames(c, b);
    await change(t.root, b, { status: '0' });
    await expectLoginNames(c, a);
  });

  it('a suspended middle tenant B leaves A working and suspends C', async () => {
    const { a, b, c } = await chain();
    await change(a.admin, b, { status: '1' });
    expect((await a.admin.get('/auth/me')).status).toBe(200);
    await expectTokenRefused(c.admin);
    await expectLoginNames(c, b);
  });
});

describe('disable and delete revoke the sessions issued before', () => {
  it('a user disabled and enabled again: the old token stays refused, a new login works', async () => {
    const p = await createTenantWithAdmin(t);
    const user = await createUserAndLogin(t, p.admin, p.tenant.tenantId, 'user');
    const body = { userId: user.userId, userName: user.userName, roles: ['user'] };
    expect((await p.admin.put('/system/user-api', { ...body, status: '1' })).status).toBe(200);
    await expectTokenRefused(user.client);
    expect((await p.admin.put('/system/user-api', { ...body, status: '0' })).status).toBe(200);
    await expectTokenRefused(user.client);
    expect((await (await t.login(p.tenant.tenantId, user.userName, user.password)).get('/auth/me')).status).toBe(200);
  });

  it("a tenant disabled and enabled again: its users' and its descendants' old tokens stay refused, new logins work", async () => {
    const { a, b, c, cUser } = await chain();
    await change(a.admin, b, { status: '1' });
    await change(a.admin, b, { status: '0' });
    for (const client of [b.admin, c.admin, cUser.client]) await expectTokenRefused(client);
    expect((await a.admin.get('/auth/me')).status).toBe(200);
    expect((await loginAs(b)).status).toBe(200);
    expect((await loginAs(c)).status).toBe(200);
  });

  it("a deleted user's and a deleted tenant's sessions are revoked rows", async () => {
    const p = await createTenantWithAdmin(t);
    const user = await createUserAndLogin(t, p.admin, p.tenant.tenantId, 'user');
    expect((await p.admin.delete(`/system/user-api/${user.userId}`)).status).toBe(200);
    const open = async (tenantId: string) =>
      (
        await t.sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM auth_session WHERE tenant_id = ${tenantId} AND revoked_at IS NULL AND expires_at > now()`
      )[0]!.n;
    const [userOpen] = await t.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM auth_session WHERE tenant_id = ${p.tenant.tenantId} AND user_id = ${user.userId} AND revoked_at IS NULL`;
    expect(userOpen!.n).toBe(0);
    expect(await open(p.tenant.tenantId)).toBeGreaterThan(0);
    expect((await t.root.delete(`${BASE}/${p.tenant.id}`)).status).toBe(200);
    expect(await open(p.tenant.tenantId)).toBe(0);
    await expectTokenRefused(p.admin);
  });
});

describe.skipIf(!inject('databaseUrl'))('a login racing a disable', () => {
  it('is refused (403) rather than issued a session on the state read before the disable', async () => {
    const p = await createTenantWithAdmin(t);
    const code = p.tenant.tenantId;
    let attempt!: ReturnType<typeof loginAs>;
    // What a tenant disable does (tenant.sql.ts updateTenant), held open while
    // the login runs: lock the row, change it, revoke the sessions, commit.
    await t.sql.begin(async (tx) => {
      await tx`SELECT 1 FROM sys_tenant WHERE tenant_id = ${code} FOR UPDATE`;
      attempt = loginAs(p);
      await new Promise((resolve) => setTimeout(resolve, 500));
      await tx`UPDATE sys_tenant SET status = '1' WHERE tenant_id = ${code}`;
      await tx`UPDATE auth_session SET revoked_at = now() WHERE tenant_id = ${code} AND revoked_at IS NULL`;
    });
    const res = await attempt;
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    expect(res.body.msg).toMatch(/disabled/);
  });
});
