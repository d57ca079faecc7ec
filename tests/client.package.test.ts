import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { ApiError, createDeptTenantClient, isApiError, type DeptTenantClient } from '../packages/client/src/index.js';
import { ADMIN_PASSWORD, buildTestApp, type TestApp } from './support/app.js';
import { uniq } from './support/names.js';

// The typed client (packages/client, docs/api-clients.md) against the service
// listening on loopback: what its README promises, through real HTTP.
let t: TestApp;
let base: string;
let root: DeptTenantClient;

beforeAll(async () => {
  t = await buildTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  root = createDeptTenantClient({ baseUrl: base });
  await root.login({ tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD });
});
afterAll(() => t?.close());

/** A tenant with its first admin, and a client logged in as that admin. */
async function tenantWithAdmin(): Promise<{ id: string; tenantId: string; admin: DeptTenantClient }> {
  const name = uniq('client');
  const created = await root.call('createTenant', {
    body: { tenantName: name, companyName: name, contactUserName: 'Li', contactPhone: '13800000000', username: 'boss', password: 'boss-password-1' },
  });
  if (!created.ok) throw created.error;
  const id = created.location!.split('/').pop()!;
  const tenant = await root.api.getTenant({ path: { id } });
  const admin = createDeptTenantClient({ baseUrl: base });
  await admin.login({ tenantId: tenant.tenantId, username: 'boss', password: 'boss-password-1' });
  return { id, tenantId: tenant.tenantId, admin };
}

describe('the typed client', () => {
  it('logs in, sends its bearer token, and unwraps the envelope to the typed data', async () => {
    const me = await root.api.me();
    expect(me.user.userName).toBe('admin');
    expect(root.token).toMatch(/^ey/);
    const tree = await root.api.deptTree();
    expect(Array.isArray(tree)).toBe(true);
  });

  it('creates, reads and moves departments; the create answers the new path', async () => {
    const { admin } = await tenantWithAdmin();
    const [rootDept] = await admin.api.deptTree();
    const created = await admin.call('createDept', { body: { parentId: rootDept!.deptId, deptName: 'Sales', orderNum: 1 } });
    expect(created.ok).toBe(true);
    const deptId = Number(created.ok && created.location!.split('/').pop());
    const dept = await admin.api.getDept({ path: { id: String(deptId) } });
    expect(dept).toMatchObject({ deptId, deptName: 'Sales', parentId: rootDept!.deptId, status: '0' });
  });

  it('answers failures as typed values carrying code and msg, and throws them from api.*', async () => {
    const missing = await root.call('getDept', { path: { id: '999999999' } });
    expect(missing.ok).toBe(false);
    if (!missing.ok) {
      expect(missing.error).toBeInstanceOf(ApiError);
      expect(missing.error.code).toBe(404);
      expect(missing.error.msg).toMatch(/not found/i);
      expect(missing.error.requestId).toBeTruthy();
    }
    const thrown = await root.api.createDept({ body: { parentId: 0, deptName: '' } }).catch((err: unknown) => err);
    expect(isApiError(thrown, 400)).toBe(true);
    expect(isApiError(thrown, 404)).toBe(false);

    const anonymous = createDeptTenantClient({ baseUrl: base });
    const refused = await anonymous.call('deptTree');
    expect(!refused.ok && refused.error.code).toBe(401);
  });

  it('sends If-Match from a read ETag: a stale one is refused with 412, the current one applies', async () => {
    const { id } = await tenantWithAdmin();
    const { data: tenant, etag } = await root.read('getTenant', { path: { id } });
    expect(etag).toMatch(/^"/);
    const { createBy: _by, createTime: _at, updateBy: _uby, updateTime: _ut, ...body } = tenant;
    await root.api.updateTenant({ body: { ...body, companyName: 'First' }, ifMatch: etag });
    const stale = await root.call('updateTenant', { body: { ...body, companyName: 'Second' }, ifMatch: etag });
    expect(!stale.ok && stale.error.code).toBe(412);
    expect((await root.api.getTenant({ path: { id } })).companyName).toBe('First');
  });

  it('iterates every row of a paged list, page by page', async () => {
    const made = [await tenantWithAdmin(), await tenantWithAdmin(), await tenantWithAdmin()];
    const seen: string[] = [];
    for await (const tenant of root.rows('listTenants', { query: { pageSize: 2 } })) seen.push(tenant.id);
    expect(seen).toEqual([...seen].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)));
    expect(new Set(seen).size).toBe(seen.length);
    for (const { id } of made) expect(seen).toContain(id);
  });

  it('calls with an API key as the bearer token, and forgets a token at logout', async () => {
    const { admin } = await tenantWithAdmin();
    const key = await admin.api.createApiKey({ body: { name: uniq('key'), role: 'user' } });
    const program = createDeptTenantClient({ baseUrl: base, apiKey: key.key });
    expect((await program.api.deptTree()).length).toBe(1);

    const token = admin.token;
    await admin.logout();
    expect(admin.token).toBeUndefined();
    const revoked = await createDeptTenantClient({ baseUrl: base, token }).call('deptTree');
    expect(!revoked.ok && revoked.error.code).toBe(401);
  });
});
