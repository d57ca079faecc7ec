import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApp, Client, createUserAndLogin, secondNode, type Node, type TestApp } from './support/app.js';
import { dayFromToday, createTenantWithAdmin, readTenant, writable, type TenantWithAdmin } from './support/tenant-fixtures.js';

// API keys through HTTP (docs/security.md#api-keys): created by a tenant's
// admins and shown once, only a hash kept; sent as a Bearer token they act
// in their own tenant with their role, audit records naming them
// `apikey:<name>`; revocation, expiry and the tenant chain's suspension
// refuse them like a login's token; they never count as accounts.

const API = '/system/apikey-api';
const KEY_SHAPE = /^sk_[A-Za-z0-9_-]{43,}$/;

let t: TestApp;
let node2: Node;
beforeAll(async () => {
  t = await buildTestApp();
  node2 = await secondNode(t);
});
afterAll(async () => {
  await node2?.close();
  await t?.close();
});

let seq = 0;
/** Creates a key as `as`; expects 200 and returns the answer's data and a client that sends the key. */
async function newKey(as: Client, body: Record<string, unknown> = {}) {
  const res = await as.post(API, { name: `key-${++seq}`, role: 'admin', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const data = res.body.data as { id: number; name: string; role: string; key: string; expiresAt: string | null; createTime: string };
  return { data, client: new Client(t.app, data.key), location: res.headers.location };
}
const deptOf = async (as: Client, deptName: string) => as.post('/system/dept-api', { parentId: 0, deptName });
const auditOf = async (action: string, entityId: number | string) =>
  (await t.root.get(`/system/audit-api/list?action=${action}&entityId=${entityId}`)).body.data.rows as any[];

describe('creating, reading and revoking keys', () => {
  it('shows the key once, `sk_` and base64url of at least 32 random bytes, and stores only its SHA-256', async () => {
    const p = await createTenantWithAdmin(t);
    const { data, location } = await newKey(p.admin, { name: 'hr-sync', role: 'user', expiresAt: dayFromToday(30) });
    expect(Object.keys(data).sort()).toEqual(['createTime', 'expiresAt', 'id', 'key', 'name', 'role']);
    expect(data).toMatchObject({ name: 'hr-sync', role: 'user', expiresAt: dayFromToday(30) });
    expect(data.key).toMatch(KEY_SHAPE);
    expect(Buffer.from(data.key.slice(3), 'base64url').length).toBeGreaterThanOrEqual(32 + 7);
    expect(data.createTime).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(location).toBe(`${API}/${data.id}`);
    expect((await newKey(p.admin)).data.key).not.toBe(data.key);

    const [row] = await t.sql<{ hash: Buffer; image: string }[]>`
      SELECT key_hash AS hash, to_jsonb(k)::text AS image FROM sys_api_key k WHERE tenant_id = ${p.tenant.tenantId} AND key_id = ${data.id}`;
    expect(row!.hash.equals(createHash('sha256').update(data.key).digest())).toBe(true);
    expect(row!.image).not.toContain(data.key.slice(3));

    // Read back: never the key.
    const one = await p.admin.get(`${API}/${data.id}`);
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual({
      id: data.id,
      name: 'hr-sync',
      role: 'user',
      expiresAt: dayFromToday(30),
      createBy: p.username,
      createTime: data.createTime,
      lastUsedTime: null,
    });
    const list = await p.admin.get(`${API}/list?pageNum=1&pageSize=1`);
    expect(list.body.data.total).toBe(2);
    expect(list.body.data.rows).toEqual([one.body.data]);
    expect(JSON.stringify((await p.admin.get(`${API}/list?pageSize=100`)).body)).not.toContain('sk_');

    // The audit record names the key's fields, never the key.
    const [record] = await auditOf('apikey.create', data.id);
    expect(record).toMatchObject({ tenantId: p.tenant.tenantId, userName: p.username, entityType: 'apikey' });
    expect(record.changes).toEqual({ name: 'hr-sync', role: 'user', expiresAt: dayFromToday(30) });
  });

  it('refuses bad bodies, a role above admin, a user, a duplicate live name and a last day already past', async () => {
    const p = await createTenantWithAdmin(t);
    for (const body of [
      {},
      { name: 'x' },
      { name: 'x', role: 'superadmin' },
      { name: '', role: 'admin' },
      { name: ' padded', role: 'admin' },
      { name: 'x'.repeat(51), role: 'admin' },
      { name: 'x', role: 'admin', expiresAt: '2026-13-01' },
      { name: 'x', role: 'admin', expiresAt: 'tomorrow' },
    ]) {
      const res = await p.admin.post(API, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.data).toBeNull();
    }
    const past = await p.admin.post(API, { name: 'old', role: 'admin', expiresAt: dayFromToday(-1) });
    expect(past.status).toBe(400);
    expect(past.body.msg).toContain('has passed');

    const user = await createUserAndLogin(t, p.admin, p.tenant.tenantId, 'user');
    for (const res of [await user.client.post(API, { name: 'mine', role: 'user' }), await user.client.get(`${API}/list`)]) {
      expect(res.status).toBe(403);
    }

    const first = await newKey(p.admin, { name: 'dup' });
    const again = await p.admin.post(API, { name: 'dup', role: 'user' });
    expect(again.status).toBe(409);
    // Another tenant may use the name; a revoked key's name is free again.
    await newKey((await createTenantWithAdmin(t)).admin, { name: 'dup' });
    expect((await p.admin.delete(`${API}/${first.data.id}`)).status).toBe(200);
    await newKey(p.admin, { name: 'dup' });
    expect(await t.sql`SELECT 1 FROM sys_api_key WHERE tenant_id = ${p.tenant.tenantId} AND name = 'old'`).toHaveLength(0);
  });

  it('revokes at once on this node and within 2 s on another; a revoked key is gone from reads', async () => {
    const p = await createTenantWithAdmin(t);
    const { data, client } = await newKey(p.admin);
    const onNode2 = new Client(node2.app, data.key);
    expect((await client.get('/system/dept-api/list')).status).toBe(200);
    expect((await onNode2.get('/system/dept-api/list')).status).toBe(200);

    expect((await p.admin.delete(`${API}/${data.id}`)).status).toBe(200);
    const refused = await client.get('/system/dept-api/list');
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ code: 401, data: null });
    // Node 2 read the key before the revoke and keeps it at most 2 s; the bound adds a poll (200 ms) and a loaded machine's request.
    const started = Date.now();
    await expect.poll(async () => (await onNode2.get('/system/dept-api/list')).status, { timeout: 3_000, interval: 200 }).toBe(401);
    expect(Date.now() - started).toBeLessThan(3_000);

    expect((await p.admin.get(`${API}/${data.id}`)).status).toBe(404);
    expect((await p.admin.delete(`${API}/${data.id}`)).status).toBe(404);
    expect((await p.admin.get(`${API}/list`)).body.data.total).toBe(0);
    const [record] = await auditOf('apikey.delete', data.id);
    expect(record).toMatchObject({ userName: p.username, changes: { name: data.name, role: 'admin', expiresAt: null } });
  });

  it("reaches only its own tenant's keys: another tenant's key id is 404", async () => {
    const a = await createTenantWithAdmin(t);
    const b = await createTenantWithAdmin(t);
    const { data } = await newKey(b.admin);
    expect((await a.admin.get(`${API}/${data.id}`)).status).toBe(404);
    expect((await a.admin.delete(`${API}/${data.id}`)).status).toBe(404);
    expect((await b.admin.get(`${API}/${data.id}`)).status).toBe(200);
  });
});

describe('a key as the credential', () => {
  it('acts in its own tenant with its role; audit records and createBy name it apikey:<name>; lastUsedTime to the minute', async () => {
    const p = await createTenantWithAdmin(t);
    const other = await createTenantWithAdmin(t);
    const { data, client } = await newKey(p.admin, { name: 'provisioner' });

    const created = await deptOf(client, 'Made by a key');
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = Number(String(created.headers.location).split('/').pop());
    const dept = (await p.admin.get(`/system/dept-api/${id}`)).body.data;
    expect(dept.createBy).toBe('apikey:provisioner');
    const [record] = await auditOf('dept.create', id);
    expect(record).toMatchObject({ tenantId: p.tenant.tenantId, userName: 'apikey:provisioner', userTenantId: p.tenant.tenantId });
    expect((await p.admin.get(`/system/audit-api/list?userName=apikey:provisioner`)).body.data.total).toBeGreaterThan(0);

    // Its own tenant only: another tenant's department is not found, and a body naming another tenant is refused.
    const foreign = Number(
      String((await deptOf(other.admin, 'Not yours')).headers.location)
        .split('/')
        .pop(),
    );
    expect((await client.get(`/system/dept-api/${foreign}`)).status).toBe(404);
    const elsewhere = await client.post('/system/dept-api', { parentId: 0, deptName: 'Elsewhere', tenantId: other.tenant.tenantId });
    expect(elsewhere.status, JSON.stringify(elsewhere.body)).toBe(403);

    // An admin key manages keys too.
    expect((await newKey(client, { name: 'made-by-key', role: 'user' })).data.role).toBe('user');

    const read = (await p.admin.get(`${API}/${data.id}`)).body.data;
    expect(read.lastUsedTime).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:00$/);
    const [row] = await t.sql<
      { at: Date }[]
    >`SELECT last_used_time AS at FROM sys_api_key WHERE tenant_id = ${p.tenant.tenantId} AND key_id = ${data.id}`;
    expect(Date.now() - row!.at.getTime()).toBeLessThan(120_000);
  });

  it('a user-role key reads but may not write or manage keys', async () => {
    const p = await createTenantWithAdmin(t);
    const { client } = await newKey(p.admin, { role: 'user' });
    expect((await client.get('/system/dept-api/list')).status).toBe(200);
    const write = await deptOf(client, 'Nope');
    expect(write.status).toBe(403);
    expect(write.body.msg).toContain('system:dept:add');
    expect((await client.get(`${API}/list`)).status).toBe(403);
    expect((await client.post(API, { name: 'escalate', role: 'admin' })).status).toBe(403);
  });

  it('is refused when unknown, malformed or pointed at another tenant, and on the routes of a personal session', async () => {
    const p = await createTenantWithAdmin(t);
    const other = await createTenantWithAdmin(t);
    const { data, client } = await newKey(p.admin);
    // The same secret presented as another tenant's key: the hash does not match there.
    const bytes = Buffer.from(data.key.slice(3), 'base64url');
    bytes.write(other.tenant.tenantId, 1, 'utf8');
    const retargeted = `sk_${bytes.toString('base64url')}`;
    const flipped = data.key.slice(0, -2) + (data.key.endsWith('A') ? 'BA' : 'AA');
    for (const key of ['sk_', 'sk_nothing', `sk_${'A'.repeat(60)}`, retargeted, flipped]) {
      const res = await new Client(t.app, key).get('/system/dept-api/list');
      expect(res.status, key).toBe(401);
      expect(res.body.msg).toContain('API key');
    }
    expect((await client.get('/auth/me')).status).toBe(403);
    const logout = await client.post('/auth/logout');
    expect(logout.status).toBe(403);
    expect(logout.body.msg).toContain('revoke it');
    expect((await client.get('/system/dept-api/list')).status).toBe(200);
  });

  it('dies at the end of its last day; a refused key is not marked used', async () => {
    const p = await createTenantWithAdmin(t);
    const { data, client } = await newKey(p.admin, { expiresAt: dayFromToday(0) });
    expect((await client.get('/system/dept-api/list')).status).toBe(200);
    await t.sql`UPDATE sys_api_key SET last_used_time = NULL WHERE tenant_id = ${p.tenant.tenantId} AND key_id = ${data.id}`;
    // Time passes: the stored last day becomes yesterday.
    await t.sql`UPDATE sys_api_key SET expires_at = ${dayFromToday(-1)}::date WHERE tenant_id = ${p.tenant.tenantId} AND key_id = ${data.id}`;
    const refused = await vi.waitFor(
      async () => {
        const res = await client.get('/system/dept-api/list');
        expect(res.status).toBe(401);
        return res;
      },
      { timeout: 3_000, interval: 200 },
    );
    expect(refused.body.msg).toContain(`expired on ${dayFromToday(-1)}`);
    expect((await p.admin.get(`${API}/${data.id}`)).body.data.lastUsedTime).toBeNull();
  });

  it('does not count against accountCount', async () => {
    const p = await createTenantWithAdmin(t, t.root, { accountCount: 1 });
    const full = await p.admin.post('/system/user-api', { userName: 'one_too_many', password: 'password-123' });
    expect(full.status, JSON.stringify(full.body)).not.toBe(200);
    for (let i = 0; i < 3; i++) await newKey(p.admin);
    expect((await p.admin.get(`${API}/list`)).body.data.total).toBe(3);
  });
});

describe("the tenant chain's suspension", () => {
  /** PUT the tenant's current state with `patch`, as `as` (an ancestor's admin). */
  async function change(as: Client, p: TenantWithAdmin, patch: Record<string, unknown>) {
    const res = await as.put('/system/tenant-api', { ...writable(await readTenant(t.root, p.tenant.id)), ...patch });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  const use = (client: Client) => client.get('/system/dept-api/list');

  it("disabling the tenant or an ancestor revokes the subtree's keys for good, naming the cause", async () => {
    const a = await createTenantWithAdmin(t);
    const b = await createTenantWithAdmin(t, a.admin);
    const outside = await createTenantWithAdmin(t);
    const bKey = (await newKey(b.admin)).client;
    const outsideKey = (await newKey(outside.admin)).client;

    await change(t.root, a, { status: '1' });
    const refused = await use(bKey);
    expect(refused.status).toBe(401);
    expect(refused.body.msg).toContain(a.tenant.tenantId);
    expect((await use(outsideKey)).status).toBe(200);

    // Re-enabling lifts the suspension, not the revocation (as for a login's tokens).
    await change(t.root, a, { status: '0' });
    expect((await use(bKey)).status).toBe(401);
    const [row] = await t.sql<{ by: string }[]>`SELECT revoke_by AS by FROM sys_api_key WHERE tenant_id = ${b.tenant.tenantId}`;
    expect(row!.by).toBe('admin');
  });

  it('a service period that lapses refuses the key while it lasts; deleting the tenant ends it', async () => {
    const p = await createTenantWithAdmin(t);
    const { client } = await newKey(p.admin);
    // The period runs out as time passes (no write through the API): refused while outside it, back when extended.
    await t.sql`UPDATE sys_tenant SET end_time = ${dayFromToday(-1)}::date WHERE tenant_id = ${p.tenant.tenantId}`;
    const lapsed = await vi.waitFor(
      async () => {
        const res = await use(client);
        expect(res.status).toBe(401);
        return res;
      },
      { timeout: 3_000, interval: 200 },
    );
    expect(lapsed.body.msg).toContain('service period ended');
    await t.sql`UPDATE sys_tenant SET end_time = NULL WHERE tenant_id = ${p.tenant.tenantId}`;
    await expect.poll(async () => (await use(client)).status, { timeout: 3_000, interval: 200 }).toBe(200);

    expect((await t.root.delete(`/system/tenant-api/${p.tenant.id}`)).status).toBe(200);
    const deleted = await use(client);
    expect(deleted.status).toBe(401);
  });
});
