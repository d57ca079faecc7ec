import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createUserAndLogin, type Client, type TestApp } from './support/app.js';
import {
  createTenant,
  locationId,
  createTenantWithAdmin,
  readTenant,
  tenantBody,
  writable,
  type TenantWithAdmin,
} from './support/tenant-fixtures.js';
import { uniq } from './support/names.js';

// Packages through HTTP (docs/api-rules.md#packages): the superadmin writes
// them, admins read them; tenants take one by packageBo.packageId and read
// its current menus; a change of menus reaches every live tenant on the
// package in one transaction, with a tenant.menus record in each one's
// trail; a package in use is not deleted, also when a tenant takes it at
// that moment; a disabled package is kept but not newly taken.

const API = '/system/package-api';

let t: TestApp;
let parent: TenantWithAdmin;
beforeAll(async () => {
  t = await buildTestApp();
  parent = await createTenantWithAdmin(t);
});
afterAll(async () => t?.close());

/** Creates a package as the superadmin; answers its id (from Location). */
async function createPackage(body: Record<string, unknown> = {}): Promise<string> {
  const res = await t.root.post(API, { packageName: uniq('Pkg'), ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const match = /^\/system\/package-api\/([0-9]{19})$/.exec(String(res.headers.location));
  expect(match, String(res.headers.location)).not.toBeNull();
  return match![1]!;
}
async function readPackage(id: string, as: Client = t.root) {
  const res = await as.get(`${API}/${id}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { ...res.body.data, etag: String(res.headers.etag) };
}
const putPackage = (body: Record<string, unknown>, headers: Record<string, string> = {}) => t.root.request('PUT', API, body, headers);
/** The records of `action` in the trail `as` sees, newest first. */
const records = async (as: Client, action: string, query = '') =>
  (await as.get(`/system/audit-api/list?action=${action}&pageSize=100${query}`)).body.data.rows as {
    tenantId: string;
    entityId: string;
    changes: Record<string, unknown>;
  }[];

describe('packages', () => {
  it('creates, reads (with ETag), lists and replaces a package; the fields as sent, normalised', async () => {
    const name = uniq('Standard');
    const id = await createPackage({ packageName: `  ${name} `, menuIds: '3, 1,3 ,2', remark: 'for small shops' });
    const pkg = await readPackage(id);
    expect(pkg).toMatchObject({ packageId: id, packageName: name, menuIds: '3,1,2', remark: 'for small shops', status: '0', createBy: 'admin' });
    expect(pkg.createTime).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(pkg.updateTime).toBeNull();
    expect(pkg.etag).toMatch(/^"/);
    // Defaults: no menus, no remark, open to tenants.
    const bare = await readPackage(await createPackage());
    expect(bare).toMatchObject({ menuIds: '', remark: null, status: '0' });

    const list = await t.root.get(`${API}/list?packageName=${encodeURIComponent(name)}`);
    expect(list.status).toBe(200);
    expect(list.body.data).toMatchObject({ total: 1, rows: [{ packageId: id, packageName: name }] });
    const disabledOnly = await t.root.get(`${API}/list?packageName=${encodeURIComponent(name)}&status=1`);
    expect(disabledOnly.body.data.total).toBe(0);

    const { etag, ...body } = pkg;
    expect((await putPackage({ ...body, menuIds: '1,2', remark: null }, { 'if-match': etag })).status).toBe(200);
    expect(await readPackage(id)).toMatchObject({ menuIds: '1,2', remark: null, updateBy: 'admin' });
    // The ETag read before the change no longer matches: 412, nothing changed.
    const stale = await putPackage({ ...body, menuIds: '9' }, { 'if-match': etag });
    expect(stale.status).toBe(412);
    expect((await readPackage(id)).menuIds).toBe('1,2');
  });

  it('checks If-Match on a delete of one package (412 when stale), refuses it beside several ids (400), and answers 404 for a package not found', async () => {
    const id = await createPackage({ menuIds: '1' });
    const other = await createPackage();
    const { etag, ...body } = await readPackage(id);
    expect((await putPackage({ ...body, remark: 'changed' })).status).toBe(200);
    expect((await t.root.request('DELETE', `${API}/${id}`, undefined, { 'if-match': etag })).status).toBe(412);
    expect((await t.root.request('DELETE', `${API}/${id},${other}`, undefined, { 'if-match': etag })).status).toBe(400);
    expect((await t.root.get(`${API}/${id}`)).status).toBe(200);
    const current = (await readPackage(id)).etag;
    expect((await t.root.request('DELETE', `${API}/${id}`, undefined, { 'if-match': current })).status).toBe(200);
    expect((await putPackage({ ...body, packageId: id })).status).toBe(404);
    expect((await putPackage({ ...body, packageId: '1234567890123456789' })).status).toBe(404);
  });

  it('is written by the superadmin alone and read by admins (users: 403)', async () => {
    const id = await createPackage();
    expect((await parent.admin.get(`${API}/${id}`)).status).toBe(200);
    expect((await parent.admin.get(`${API}/list`)).status).toBe(200);
    expect((await parent.admin.post(API, { packageName: uniq('P') })).status).toBe(403);
    expect((await parent.admin.put(API, { packageId: id, packageName: uniq('P') })).status).toBe(403);
    expect((await parent.admin.delete(`${API}/${id}`)).status).toBe(403);
    const user = await createUserAndLogin(t, parent.admin, parent.tenant.tenantId, 'user');
    expect((await user.client.get(`${API}/${id}`)).status).toBe(403);
    expect((await t.anon.get(`${API}/${id}`)).status).toBe(401);
  });

  it('refuses bad input with 400 naming the field, and a live name taken with 409; a deleted name is free again', async () => {
    for (const [body, field] of [
      [{ packageName: '' }, 'packageName'],
      [{ packageName: '   ' }, 'packageName'],
      [{ packageName: 'x'.repeat(101) }, 'packageName'],
      [{ packageName: uniq('P'), menuIds: '1,a' }, 'menuIds'],
      [{ packageName: uniq('P'), menuIds: '0' }, 'menuIds'],
      [{ packageName: uniq('P'), remark: 'r'.repeat(501) }, 'remark'],
      [{ packageName: uniq('P'), status: '2' }, 'status'],
      [{}, 'packageName'],
    ] as const) {
      const res = await t.root.post(API, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.msg).toContain(field);
    }
    const name = uniq('Taken');
    const id = await createPackage({ packageName: name });
    const again = await t.root.post(API, { packageName: ` ${name}` });
    expect(again.status).toBe(409);
    expect((await t.root.delete(`${API}/${id}`)).status).toBe(200);
    expect((await t.root.get(`${API}/${id}`)).status).toBe(404);
    await createPackage({ packageName: name });
    expect((await t.root.get(`${API}/9999999999999999999`)).status).toBe(404);
    expect((await t.root.get(`${API}/12x`)).status).toBe(400);
  });

  it('records package.create, package.update and package.delete in the platform trail', async () => {
    const id = await createPackage({ menuIds: '1' });
    const pkg = await readPackage(id);
    const { etag: _e, ...body } = pkg;
    await putPackage({ ...body, remark: 'changed' });
    await t.root.delete(`${API}/${id}`);
    const mine = (action: string) => records(t.root, action).then((rows) => rows.filter((r) => r.entityId === id));
    const [created] = await mine('package.create');
    expect(created).toMatchObject({ tenantId: '000000', changes: { packageId: id, packageName: pkg.packageName, menuIds: '1', status: '0' } });
    expect((await mine('package.update'))[0]!.changes).toEqual({ remark: { before: null, after: 'changed' } });
    expect((await mine('package.delete'))[0]!.changes).toMatchObject({ packageId: id, remark: 'changed' });
  });
});

describe('tenants on a package', () => {
  it("takes the package's menus; a read shows its packageId and current menus; a tenant without one reads as before", async () => {
    const id = await createPackage({ menuIds: '5,6,7' });
    const tenant = await createTenant(parent.admin, { tenantParent: parent.tenant.tenantId, packageBo: { packageId: id } });
    expect(tenant.packageBo).toEqual({ menuIds: '5,6,7', packageId: id });
    // menuIds beside it: the package's, in any order, is fine; others are 400.
    const same = await createTenant(parent.admin, { packageBo: { packageId: id, menuIds: '7, 5,6' } });
    expect(same.packageBo).toEqual({ menuIds: '5,6,7', packageId: id });
    const other = await parent.admin.post('/system/tenant-api', tenantBody({ packageBo: { packageId: id, menuIds: '5,6' } }));
    expect(other.status).toBe(400);
    expect(other.body.msg).toContain('packageBo.menuIds');
    // Without a packageId: its own menus, and no packageId in the read.
    const own = await createTenant(parent.admin, { packageBo: { menuIds: '1,2' } });
    expect(own.packageBo).toEqual({ menuIds: '1,2' });
    // Leaving the package (a full replacement without packageId) keeps the menus sent.
    const put = await parent.admin.put('/system/tenant-api', { ...writable(same), packageBo: { menuIds: '9' } });
    expect(put.status).toBe(200);
    expect((await readTenant(parent.admin, same.id)).packageBo).toEqual({ menuIds: '9' });
  });

  it('refuses a package that is not live (400) and a disabled one (409); a tenant already on a disabled package keeps it', async () => {
    const gone = await createPackage();
    await t.root.delete(`${API}/${gone}`);
    for (const packageId of [gone, '1234567890123456789', '9999999999999999999']) {
      const res = await parent.admin.post('/system/tenant-api', tenantBody({ packageBo: { packageId } }));
      expect(res.status, packageId).toBe(400);
      expect(res.body.msg).toContain('packageId');
    }
    const id = await createPackage({ menuIds: '1' });
    const tenant = await createTenant(parent.admin, { packageBo: { packageId: id } });
    const pkg = await readPackage(id);
    const { etag: _e, ...body } = pkg;
    expect((await putPackage({ ...body, status: '1' })).status).toBe(200);
    const refused = await parent.admin.post('/system/tenant-api', tenantBody({ packageBo: { packageId: id } }));
    expect(refused.status).toBe(409);
    expect(refused.body.msg).toContain('disabled');
    // Another tenant may not move onto it either.
    const own = await createTenant(parent.admin, {});
    expect((await parent.admin.put('/system/tenant-api', { ...writable(own), packageBo: { packageId: id } })).status).toBe(409);
    // Read and written back as it is: 200, still on the package.
    const read = await readTenant(parent.admin, tenant.id);
    expect((await parent.admin.put('/system/tenant-api', { ...writable(read), tenantName: uniq('Renamed') })).status).toBe(200);
    expect((await readTenant(parent.admin, tenant.id)).packageBo).toEqual({ menuIds: '1', packageId: id });
  });

  it("reaches every live tenant on it when its menus change, with one tenant.menus record in each one's own trail", async () => {
    const id = await createPackage({ menuIds: '1,2,3' });
    const a = await createTenantWithAdmin(t, parent.admin, { tenantParent: parent.tenant.tenantId, packageBo: { packageId: id } });
    const b = await createTenant(parent.admin, { packageBo: { packageId: id } });
    const deleted = await createTenant(parent.admin, { packageBo: { packageId: id } });
    expect((await parent.admin.delete(`/system/tenant-api/${deleted.id}`)).status).toBe(200);
    const bystander = await createTenant(parent.admin, { packageBo: { menuIds: '1,2,3' } });
    const before = await readTenant(parent.admin, b.id);

    const { etag: _e, ...body } = await readPackage(id);
    expect((await putPackage({ ...body, menuIds: '3,4, 1,5' })).status).toBe(200);
    for (const tenant of [a.tenant, b]) expect((await readTenant(parent.admin, tenant.id)).packageBo).toEqual({ menuIds: '3,4,1,5', packageId: id });
    expect((await readTenant(parent.admin, bystander.id)).packageBo).toEqual({ menuIds: '1,2,3' });
    // The tenant's ETag follows its menus.
    expect((await parent.admin.request('PUT', '/system/tenant-api', writable(before), { 'if-match': '"stale"' })).status).toBe(412);

    // One record per changed live tenant, each in its own trail: the tenant's own admin sees its record.
    const own = await records(a.admin, 'tenant.menus');
    expect(own).toHaveLength(1);
    expect(own[0]).toMatchObject({ tenantId: a.tenant.tenantId, entityId: a.tenant.id });
    expect(own[0]!.changes).toEqual({ packageId: id, menusAdded: ['4', '5'], menusRemoved: ['2'] });
    const seen = (await records(parent.admin, 'tenant.menus')).filter((r) => r.changes.packageId === id);
    expect(seen.map((r) => r.tenantId).sort()).toEqual([a.tenant.tenantId, b.tenantId].sort());
    // The feed carries it too.
    const feed = await a.admin.get('/system/audit-api/changes?limit=1000');
    expect(feed.body.data.events.map((e: { action: string }) => e.action)).toContain('tenant.menus');

    // A change that leaves the menus as they are reaches no tenant.
    const { etag: _f, ...again } = await readPackage(id);
    expect((await putPackage({ ...again, menuIds: '3,4,1,5', remark: 'same menus' })).status).toBe(200);
    expect(await records(a.admin, 'tenant.menus')).toHaveLength(1);
  });

  it('keeps a package in use from being deleted (409 giving how many); all or none; free once its tenants leave', async () => {
    const id = await createPackage({ menuIds: '1' });
    const free = await createPackage();
    const x = await createTenant(parent.admin, { packageBo: { packageId: id } });
    const y = await createTenant(parent.admin, { packageBo: { packageId: id } });
    const res = await t.root.delete(`${API}/${free},${id}`);
    expect(res.status).toBe(409);
    expect(res.body.msg).toContain(`${id} by 2 live tenant(s)`);
    expect((await t.root.get(`${API}/${free}`)).status).toBe(200);
    expect((await t.root.delete(`${API}/${free},1234567890123456789`)).status).toBe(404);
    expect((await t.root.get(`${API}/${free}`)).status).toBe(200);
    await parent.admin.delete(`/system/tenant-api/${x.id}`);
    await parent.admin.put('/system/tenant-api', { ...writable(y), packageBo: { menuIds: '1' } });
    expect((await t.root.delete(`${API}/${free},${id}`)).status).toBe(200);
    expect((await t.root.get(`${API}/${id}`)).status).toBe(404);
  });

  it('never deletes a package a tenant takes at the same moment: one of the two is refused, and no live tenant is left on a deleted package', async () => {
    for (let round = 0; round < 8; round++) {
      const id = await createPackage({ menuIds: '1' });
      const [taken, deleted] = await Promise.all([
        parent.admin.post('/system/tenant-api', tenantBody({ packageBo: { packageId: id } })),
        t.root.delete(`${API}/${id}`),
      ]);
      // Either the tenant took it and the delete was refused, or the delete came first and the tenant was refused.
      expect([`${taken.status} ${deleted.status}`]).toContainEqual(expect.stringMatching(/^(200 409|400 200)$/));
      if (taken.status === 200) expect((await readTenant(parent.admin, locationId(taken))).packageBo.packageId).toBe(id);
    }
    const [orphans] = await t.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM sys_tenant t JOIN sys_package p ON p.package_id = t.package_id WHERE t.del_flag = '0' AND p.del_flag = '2'`;
    expect(orphans!.n).toBe(0);
  });

  it('gives a tenant taking a package while its menus change the new menus', async () => {
    for (let round = 0; round < 5; round++) {
      const id = await createPackage({ menuIds: '1' });
      const { etag: _e, ...body } = await readPackage(id);
      const [taken] = await Promise.all([
        parent.admin.post('/system/tenant-api', tenantBody({ packageBo: { packageId: id } })),
        putPackage({ ...body, menuIds: '2' }),
      ]);
      expect((await readTenant(parent.admin, locationId(taken))).packageBo).toEqual({ menuIds: '2', packageId: id });
    }
  });
});
