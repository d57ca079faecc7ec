import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gramsOf } from '../src/tenants/tenant.grams.js';
import { bumpTenantListVersion } from '../src/identity/tenant.version.js';
import type { Tx } from '../src/db/database.js';
import { buildTestApp, createUserAndLogin, type Client, type TestApp } from './support/app.js';
import {
  DTO_KEYS,
  NULL_RULES,
  PASSWORD,
  QUOTA_FIELDS,
  ALLOWANCES,
  STORED_QUOTAS,
  RULE_FIELDS,
  ZERO_QUOTA,
  createTenant,
  dayFromToday,
  listTotal,
  locationId,
  createTenantWithAdmin,
  readTenant,
  tenantBody,
  tenantRow,
  writable,
  type TenantWithAdmin,
  type TenantDto,
} from './support/tenant-fixtures.js';
import { uniq } from './support/names.js';

// The tenant rules (docs/api-rules.md#tenants), the tenant lifecycle at login
// and per request (docs/security.md#sign-in-and-sessions), roles
// (docs/api-rules.md#roles) and the menuIds limit (docs/api-rules.md#limits),
// through HTTP. SQL is used only to look at rows
// the API no longer shows (logically deleted ones).

let t: TestApp;
let root: Client;
beforeAll(async () => {
  t = await buildTestApp();
  root = t.root;
});
afterAll(async () => t?.close());

const BASE = '/system/tenant-api';
const post = (body: Record<string, unknown>, as: Client = root) => as.post(BASE, body);
const put = (body: Record<string, unknown>, as: Client = root) => as.put(BASE, body);

/** A refused create: the status, the field in msg, and no new live tenant. */
async function expectCreateRefused(body: Record<string, unknown>, status: number, msg?: string | RegExp, as: Client = root) {
  const before = await listTotal(root);
  const res = await post(body, as);
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.code).toBe(status);
  expect(res.body.data).toBeNull();
  if (typeof msg === 'string') expect(res.body.msg).toContain(msg);
  else if (msg) expect(res.body.msg).toMatch(msg);
  expect(await listTotal(root)).toBe(before);
  if (typeof body.companyName === 'string') {
    const [row] = await t.sql<{ n: number }[]>`SELECT count(*) AS n FROM sys_tenant WHERE company_name = ${body.companyName}`;
    // A refused create leaves no row at all (not even a deleted one), unless the name was already taken.
    if (status !== 409) expect(row!.n).toBe(0);
  }
  return res;
}

/** A refused update: the status, and the tenant exactly as before (re-read as superadmin). */
async function expectUpdateRefused(body: Record<string, unknown>, status: number, msg?: string | RegExp, as: Client = root) {
  const id = String(body.id);
  const before = await root.get(`${BASE}/${id}`);
  const res = await put(body, as);
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.data).toBeNull();
  if (typeof msg === 'string') expect(res.body.msg).toContain(msg);
  else if (msg) expect(res.body.msg).toMatch(msg);
  const after = await root.get(`${BASE}/${id}`);
  expect(after.status).toBe(before.status);
  expect(after.body.data).toEqual(before.body.data);
  return res;
}

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

// ---------------------------------------------------------------- create

describe('create', () => {
  it('answers data null with the new id in Location, and reads back every field with defaults', async () => {
    const body = tenantBody();
    const res = await post(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ code: 200, msg: 'success', data: null });
    expect(String(res.headers.location)).toMatch(/^\/system\/tenant-api\/\d{19}$/);
    const id = locationId(res);

    const tenant = await readTenant(root, id);
    expect(Object.keys(tenant).sort()).toEqual(DTO_KEYS);
    expect(typeof tenant.id).toBe('string');
    expect(tenant.id).toBe(id);
    expect(tenant.id).toMatch(/^[1-9]\d{18}$/);
    expect(typeof tenant.tenantId).toBe('string');
    expect(tenant.tenantId).toMatch(/^\d{6}$/);
    expect(tenant.tenantId).not.toBe('000000');
    expect(tenant).toEqual({
      id,
      tenantId: tenant.tenantId,
      tenantParent: '000000',
      tenantName: body.tenantName,
      startTime: null,
      endTime: null,
      contactUserName: body.contactUserName,
      contactPhone: body.contactPhone,
      companyName: body.companyName,
      status: '0',
      accountCount: -1,
      packageBo: { menuIds: '' },
      quotaBo: ZERO_QUOTA,
      ruleBo: NULL_RULES,
      createBy: 'admin',
      createTime: tenant.createTime,
      updateBy: '',
      updateTime: null,
    });
    expect(tenant.createTime).toMatch(DATETIME);
    // The list carries the same full DTO.
    const listed = await root.get(`${BASE}/list?tenantName=${encodeURIComponent(String(body.tenantName))}`);
    expect(listed.body.data).toEqual({ total: 1, totalExact: true, rows: [tenant] });
  });

  it('stores every field sent', async () => {
    const quotaBo = Object.fromEntries(QUOTA_FIELDS.map((f, i) => [f, i + 1]));
    const ruleBo = Object.fromEntries(RULE_FIELDS.map((f) => [f, `rule ${f}`]));
    const body = tenantBody({
      startTime: '2024-01-01',
      endTime: '2030-12-31',
      status: '1',
      accountCount: 25,
      packageBo: { menuIds: '5,6,7' },
      quotaBo,
      ruleBo,
    });
    const tenant = await readTenant(root, locationId(await post(body)));
    expect(tenant).toMatchObject({ ...body, tenantParent: '000000' });
  });

  it('generates distinct ids and codes, ignoring any the client sends', async () => {
    const first = await createTenant(root);
    const res = await post(tenantBody({ id: first.id, tenantId: first.tenantId }));
    const id = locationId(res);
    const second = await readTenant(root, id);
    expect(second.id).not.toBe(first.id);
    expect(second.tenantId).not.toBe(first.tenantId);
    expect(second.tenantId).toMatch(/^\d{6}$/);
    expect((await readTenant(root, first.id)).companyName).toBe(first.companyName);
  });

  it.each(['tenantName', 'companyName', 'contactUserName', 'contactPhone'])('refuses a missing %s with 400 naming it', async (field) => {
    const body = tenantBody();
    delete body[field];
    await expectCreateRefused(body, 400, field);
  });

  it.each([
    ['blank tenantName', { tenantName: '   ' }, 'tenantName'],
    ['blank companyName', { companyName: ' ' }, 'companyName'],
    ['null companyName', { companyName: null }, 'companyName'],
    ['contactPhone with letters', { contactPhone: 'call me' }, 'contactPhone'],
    ['status "2"', { status: '2' }, 'status'],
    ['status ""', { status: '' }, 'status'],
    ['accountCount -2', { accountCount: -2 }, 'accountCount'],
    ['fractional accountCount', { accountCount: 1.5 }, 'accountCount'],
    ['tenantParent not 6 digits', { tenantParent: '12' }, 'tenantParent'],
  ])('refuses %s with 400 naming the field', async (_name, patch, field) => {
    await expectCreateRefused(tenantBody(patch), 400, field);
  });

  it("tenantParent defaults to the caller's tenant", async () => {
    expect((await createTenant(root)).tenantParent).toBe('000000');
    const p = await createTenantWithAdmin(t, root);
    const child = await createTenant(p.admin);
    expect(child.tenantParent).toBe(p.tenant.tenantId);
    expect(child.createBy).toBe(p.username);
  });

  it('keeps companyName unique among live tenants (409), reusable once the holder is deleted', async () => {
    const holder = await createTenant(root);
    const res = await expectCreateRefused(tenantBody({ companyName: holder.companyName }), 409, /companyName/);
    expect(res.body.code).toBe(409);
    // Under another parent too: uniqueness is global, not per parent.
    const p = await createTenantWithAdmin(t, root);
    await expectCreateRefused(tenantBody({ companyName: holder.companyName }), 409, /companyName/, p.admin);

    expect((await root.delete(`${BASE}/${holder.id}`)).status).toBe(200);
    const reused = await createTenant(root, { companyName: holder.companyName });
    expect(reused.companyName).toBe(holder.companyName);
    expect(reused.id).not.toBe(holder.id);
    // Now the new holder blocks it again.
    await expectCreateRefused(tenantBody({ companyName: holder.companyName }), 409, /companyName/);
  });

  describe('service period', () => {
    it.each([
      ['2025-02-30', 400],
      ['2025-02-29', 400],
      ['2024-02-29', 200],
      ['2025-1-01', 400],
      ['2025-01-1', 400],
      ['2025-13-01', 400],
      ['2025-00-10', 400],
      ['2025/01/01', 400],
      ['20250101', 400],
      ['2025-01-01T00:00:00Z', 400],
      ['', 400],
      ['0000-01-01', 400],
      ['0001-01-01', 200],
    ])('startTime / endTime %s -> %i', async (day, status) => {
      for (const field of ['startTime', 'endTime']) {
        const body = tenantBody({ [field]: day });
        if (status === 200) {
          const tenant = await readTenant(root, locationId(await post(body)));
          expect(tenant[field as 'startTime']).toBe(day);
        } else {
          await expectCreateRefused(body, 400, field);
        }
      }
    });

    it('refuses start after end, accepts start equal to end, and a null bound', async () => {
      await expectCreateRefused(tenantBody({ startTime: '2025-06-02', endTime: '2025-06-01' }), 400, /startTime/);
      const same = await createTenant(root, { startTime: '2025-06-01', endTime: '2025-06-01' });
      expect(same).toMatchObject({ startTime: '2025-06-01', endTime: '2025-06-01' });
      const open = await createTenant(root, { startTime: '2025-06-01', endTime: null });
      expect(open).toMatchObject({ startTime: '2025-06-01', endTime: null });
    });
  });

  it('accepts status "0" and "1"', async () => {
    expect((await createTenant(root, { status: '0' })).status).toBe('0');
    expect((await createTenant(root, { status: '1' })).status).toBe('1');
  });

  it('accepts accountCount -1, 0 and positive values, default -1', async () => {
    expect((await createTenant(root)).accountCount).toBe(-1);
    for (const n of [-1, 0, 7]) expect((await createTenant(root, { accountCount: n })).accountCount).toBe(n);
  });

  describe('packageBo.menuIds', () => {
    it.each([
      ['1, 2,3, 2', '1,2,3'],
      [' 3 ,1,3,2 , 1 ', '3,1,2'],
      ['42', '42'],
      ['', ''],
      ['9223372036854775807', '9223372036854775807'],
    ])('stores "%s" as "%s"', async (menuIds, stored) => {
      const tenant = await createTenant(root, { packageBo: { menuIds } });
      expect(tenant.packageBo).toEqual({ menuIds: stored });
    });

    it('stores "" when packageBo is omitted or null', async () => {
      expect((await createTenant(root)).packageBo).toEqual({ menuIds: '' });
      expect((await createTenant(root, { packageBo: null })).packageBo).toEqual({ menuIds: '' });
    });

    it.each(['1,a', '0', '1,,2', '1,', ',1', '-1', '1.5', '1;2', '1 2', '+3'])('refuses "%s" with 400', async (menuIds) => {
      await expectCreateRefused(tenantBody({ packageBo: { menuIds } }), 400, 'menuIds');
    });

    it('accepts 10,000 ids and refuses 10,001', async () => {
      const ids = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(',');
      const ok = await createTenant(root, { packageBo: { menuIds: ids(10_000) } });
      expect(ok.packageBo.menuIds.split(',')).toHaveLength(10_000);
      await expectCreateRefused(tenantBody({ packageBo: { menuIds: ids(10_001) } }), 400, 'menuIds');
    });

    it('accepts 10,000 long ids written with ", " separators (under the 1 MiB body limit)', async () => {
      const ids = Array.from({ length: 10_000 }, (_, i) => String(1_000_000_000_000_000_000n + BigInt(i)));
      const tenant = await createTenant(root, { packageBo: { menuIds: ids.join(', ') } });
      expect(tenant.packageBo.menuIds).toBe(ids.join(','));
    });
  });

  describe('quotaBo', () => {
    it('defaults every field to 0 and keeps the ones sent in a partial quotaBo', async () => {
      expect((await createTenant(root)).quotaBo).toEqual(ZERO_QUOTA);
      expect((await createTenant(root, { quotaBo: null })).quotaBo).toEqual(ZERO_QUOTA);
      expect((await createTenant(root, { quotaBo: {} })).quotaBo).toEqual(ZERO_QUOTA);
      const partial = await createTenant(root, { quotaBo: { enterpriseQuery: 100, pf: 3 } });
      expect(partial.quotaBo).toEqual({ ...ZERO_QUOTA, enterpriseQuery: 100, pf: 3 });
    });

    it.each(STORED_QUOTAS)('refuses a negative %s with 400', async (field) => {
      await expectCreateRefused(tenantBody({ quotaBo: { [field]: -1 } }), 400, field);
    });

    it.each(ALLOWANCES)('takes -1 (unlimited) for the allowance %s and refuses -2 with 400', async (field) => {
      expect((await createTenant(root, { quotaBo: { [field]: -1 } })).quotaBo[field]).toBe(-1);
      await expectCreateRefused(tenantBody({ quotaBo: { [field]: -2 } }), 400, field);
    });

    it('refuses a non-integer quota', async () => {
      await expectCreateRefused(tenantBody({ quotaBo: { merchant: 1.5 } }), 400, 'merchant');
      await expectCreateRefused(tenantBody({ quotaBo: { merchant: 'lots' } }), 400, 'merchant');
    });
  });

  describe('ruleBo', () => {
    it('defaults every field to null and keeps the ones sent', async () => {
      expect((await createTenant(root)).ruleBo).toEqual(NULL_RULES);
      expect((await createTenant(root, { ruleBo: null })).ruleBo).toEqual(NULL_RULES);
      const partial = await createTenant(root, { ruleBo: { modelZr: '{"a":1}', catalogRw: null, catalogEd: 'x'.repeat(2000) } });
      expect(partial.ruleBo).toEqual({ ...NULL_RULES, modelZr: '{"a":1}', catalogEd: 'x'.repeat(2000) });
    });

    it.each(RULE_FIELDS)('refuses %s longer than 2000 characters with 400', async (field) => {
      await expectCreateRefused(tenantBody({ ruleBo: { [field]: 'x'.repeat(2001) } }), 400, field);
    });

    it('keeps null and "" apart: a PUT of the DTO as read leaves null rules null', async () => {
      const tenant = await createTenant(root, { ruleBo: { modelZr: '' } });
      expect(tenant.ruleBo).toEqual({ ...NULL_RULES, modelZr: '' });
      expect((await put(writable(tenant))).status).toBe(200);
      expect((await readTenant(root, tenant.id)).ruleBo).toEqual({ ...NULL_RULES, modelZr: '' });
    });
  });
});

// ---------------------------------------------------------------- provisioning

describe('provisioning', () => {
  it('gives the new tenant a root department named after companyName and an admin who can log in and work', async () => {
    const companyName = uniq('Acme Ltd');
    const { tenant, admin, username } = await createTenantWithAdmin(t, root, { companyName });
    expect(tenant.companyName).toBe(companyName);

    const me = await admin.get('/auth/me');
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({
      user: { userName: username },
      tenant: { id: tenant.id, tenantId: tenant.tenantId, companyName },
      roles: ['admin'],
    });

    const depts = await admin.get('/system/dept-api/list');
    expect(depts.status).toBe(200);
    expect(depts.body.data).toHaveLength(1);
    const rootDept = depts.body.data[0];
    expect(rootDept).toMatchObject({ parentId: 0, ancestors: '0', deptName: companyName, tenantId: tenant.tenantId, status: '0' });
    expect(me.body.data.user.deptId).toBe(rootDept.deptId);

    // The admin manages departments of its new tenant.
    const created = await admin.post('/system/dept-api', { parentId: rootDept.deptId, deptName: 'Sales' });
    expect(created.status).toBe(200);
    const after = await admin.get('/system/dept-api/list');
    expect(after.body.data.map((d: { deptName: string }) => d.deptName).sort()).toEqual([companyName, 'Sales'].sort());
    // ... and its users.
    const users = await admin.get('/system/user-api/list');
    expect(users.body.data.map((u: { userName: string; roles: string[] }) => [u.userName, u.roles])).toEqual([[username, ['admin']]]);
    // The password is write-only: never read back.
    expect(JSON.stringify(await root.get(`${BASE}/${tenant.id}`))).not.toContain(PASSWORD);
    // Other tenants' departments are untouched.
    expect((await root.get('/system/dept-api/list')).body.data.map((d: { deptName: string }) => d.deptName)).not.toContain(companyName);
  });

  it('a companyName of 100 characters names the root department whole (a department name holds 100 too)', async () => {
    const companyName = `${uniq('Long')} ${'y'.repeat(100)}`.slice(0, 100);
    const { admin } = await createTenantWithAdmin(t, root, { companyName });
    const depts = (await admin.get('/system/dept-api/list')).body.data;
    expect(depts.map((d: { deptName: string }) => d.deptName)).toEqual([companyName]);
  });

  it('a first admin with a 100-character username gets it as its nickName too', async () => {
    const username = `${uniq('adm')}@${'x'.repeat(100)}`.slice(0, 100);
    const tenant = await createTenant(root, { username, password: PASSWORD });
    const admin = await t.login(tenant.tenantId, username, PASSWORD);
    const users = (await admin.get('/system/user-api/list')).body.data;
    expect(users.map((u: { userName: string; nickName: string }) => [u.userName, u.nickName])).toEqual([[username, username]]);
  });

  it('measures the root department name in characters, not UTF-16 units', async () => {
    const code = uniq('E');
    const companyName = `${code}${'😀'.repeat(100 - code.length)}`;
    expect([...companyName]).toHaveLength(100);
    const { admin } = await createTenantWithAdmin(t, root, { companyName });
    const depts = (await admin.get('/system/dept-api/list')).body.data;
    expect(depts.map((d: { deptName: string }) => d.deptName)).toEqual([companyName]);
  });

  it('an admin below the platform provisions tenants under its own too', async () => {
    const p = await createTenantWithAdmin(t, root);
    const child = await createTenantWithAdmin(t, p.admin);
    expect(child.tenant.tenantParent).toBe(p.tenant.tenantId);
    expect((await child.admin.get('/auth/me')).body.data.tenant.tenantId).toBe(child.tenant.tenantId);
  });

  it.each([
    ['username without password', { username: 'boss' }, /username and password|password/],
    ['password without username', { password: PASSWORD }, /username and password|username/],
    ['a password under 8 characters', { username: 'boss', password: 'short12' }, 'password'],
    ['a username with spaces', { username: 'big boss', password: PASSWORD }, 'username'],
  ])('refuses %s with 400 and creates nothing', async (_name, patch, msg) => {
    const before = await t.sql<{ n: number }[]>`SELECT count(*) AS n FROM sys_user`;
    await expectCreateRefused(tenantBody(patch), 400, msg);
    const after = await t.sql<{ n: number }[]>`SELECT count(*) AS n FROM sys_user`;
    expect(after[0]!.n).toBe(before[0]!.n);
  });
});

// ---------------------------------------------------------------- update

describe('update', () => {
  async function fullTenant(): Promise<TenantDto> {
    return createTenant(root, {
      startTime: '2024-01-01',
      endTime: '2034-01-01',
      status: '1',
      accountCount: 9,
      packageBo: { menuIds: '1,2,3' },
      quotaBo: Object.fromEntries(QUOTA_FIELDS.map((f) => [f, 5])),
      ruleBo: Object.fromEntries(RULE_FIELDS.map((f) => [f, 'r'])),
    });
  }

  it('is a full replacement: optional fields not sent return to their defaults; who and when are recorded', async () => {
    const before = await fullTenant();
    const body = {
      id: before.id,
      tenantName: 'Renamed',
      companyName: uniq('Renamed Co'),
      contactUserName: 'Li Si',
      contactPhone: '+86 10 1234-5678',
    };
    const res = await put(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ code: 200, msg: 'success', data: null });
    const after = await readTenant(root, before.id);
    expect(after).toEqual({
      ...body,
      tenantId: before.tenantId,
      tenantParent: before.tenantParent,
      startTime: null,
      endTime: null,
      status: '0',
      accountCount: -1,
      packageBo: { menuIds: '' },
      quotaBo: ZERO_QUOTA,
      ruleBo: NULL_RULES,
      createBy: before.createBy,
      createTime: before.createTime,
      updateBy: 'admin',
      updateTime: after.updateTime,
    });
    expect(after.updateTime).toMatch(DATETIME);
    expect(after.updateTime! >= after.createTime).toBe(true);
  });

  it('stores every field sent, normalising menuIds, and accepts the DTO it read back verbatim', async () => {
    const before = await createTenant(root);
    const p = await createTenantWithAdmin(t, root);
    const child = await createTenant(p.admin);
    const body = {
      ...writable(child),
      tenantName: 'All set',
      startTime: '2024-02-29',
      endTime: '2024-02-29',
      status: '1',
      accountCount: 0,
      packageBo: { menuIds: '9, 8,9' },
      quotaBo: { chainReport: 4 },
      ruleBo: { modelEd: 'ed' },
    };
    expect((await put(body, p.admin)).status).toBe(200);
    const after = await readTenant(root, child.id);
    expect(after).toMatchObject({
      tenantName: 'All set',
      startTime: '2024-02-29',
      endTime: '2024-02-29',
      status: '1',
      accountCount: 0,
      packageBo: { menuIds: '9,8' },
      quotaBo: { ...ZERO_QUOTA, chainReport: 4 },
      ruleBo: { ...NULL_RULES, modelEd: 'ed' },
      updateBy: p.username,
    });
    // A client sending back exactly what it read (audit fields included) is fine, and changes nothing else.
    expect((await put(after as unknown as Record<string, unknown>, p.admin)).status).toBe(200);
    expect({ ...(await readTenant(root, child.id)), updateTime: null }).toEqual({ ...after, updateTime: null });
    // The neighbour created earlier is untouched.
    expect(await readTenant(root, before.id)).toEqual(before);
  });

  it('accepts tenantId and tenantParent repeated unchanged', async () => {
    const before = await createTenant(root);
    const res = await put({ ...writable(before), tenantName: 'Same codes' });
    expect(res.status).toBe(200);
    const after = await readTenant(root, before.id);
    expect(after).toMatchObject({ tenantId: before.tenantId, tenantParent: before.tenantParent, tenantName: 'Same codes' });
  });

  it.each([
    ['another tenantId', (d: TenantDto) => ({ tenantId: d.tenantId === '999998' ? '999997' : '999998' }), 'tenantId'],
    ['tenantId 000000', () => ({ tenantId: '000000' }), 'tenantId'],
    ['another tenantParent', (d: TenantDto) => ({ tenantParent: d.tenantId }), 'tenantParent'],
    ['tenantParent null', () => ({ tenantParent: null }), 'tenantParent'],
  ])('refuses %s with 400 and changes nothing', async (_name, patch, field) => {
    const before = await createTenant(root);
    await expectUpdateRefused({ ...writable(before), tenantName: 'Should not stick', ...patch(before) }, 400, field);
    expect((await readTenant(root, before.id)).tenantName).toBe(before.tenantName);
  });

  it.each([
    ['missing tenantName', { tenantName: undefined }, 'tenantName'],
    ['missing contactPhone', { contactPhone: undefined }, 'contactPhone'],
    ['start after end', { startTime: '2025-03-02', endTime: '2025-03-01' }, 'startTime'],
    ['impossible date', { endTime: '2025-02-30' }, 'endTime'],
    ['status 2', { status: '2' }, 'status'],
    ['accountCount -2', { accountCount: -2 }, 'accountCount'],
    ['bad menuIds', { packageBo: { menuIds: '1,a' } }, 'menuIds'],
    ['negative quota', { quotaBo: { zr: -1 } }, 'zr'],
    ['long rule', { ruleBo: { catalogPf: 'x'.repeat(2001) } }, 'catalogPf'],
  ])('validates like create: %s -> 400, nothing changed', async (_name, patch, field) => {
    const before = await fullTenant();
    const body: Record<string, unknown> = { ...writable(before), ...patch };
    for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
    await expectUpdateRefused(body, 400, field);
  });

  it('refuses a companyName held by another live tenant (409), nothing changed', async () => {
    const holder = await createTenant(root);
    const other = await createTenant(root);
    await expectUpdateRefused({ ...writable(other), companyName: holder.companyName }, 409, /companyName/);
    // Keeping its own name is fine.
    expect((await put({ ...writable(other), tenantName: 'keeps name' })).status).toBe(200);
  });

  it('answers 404 for an unknown or deleted id', async () => {
    const gone = await createTenant(root);
    expect((await root.delete(`${BASE}/${gone.id}`)).status).toBe(200);
    for (const id of ['1234567890123456789', '1', gone.id]) {
      const res = await put({ ...writable(gone), id });
      expect(res.status).toBe(404);
      expect(res.body.data).toBeNull();
    }
    expect((await tenantRow(t, gone.id))!.delFlag).toBe('2');
    expect((await root.get(`${BASE}/${gone.id}`)).status).toBe(404);
  });

  it.each(['abc', '0', '-1', '12345678901234567890', ''])('answers 400 for body id "%s"', async (id) => {
    const before = await listTotal(root);
    const res = await put({ ...tenantBody(), id });
    expect(res.status).toBe(400);
    expect(res.body.msg).toContain('id');
    expect(await listTotal(root)).toBe(before);
  });

  it('refuses to update or delete the platform tenant 000000, even for superadmin (403)', async () => {
    const rows = (await root.get(`${BASE}/list?pageSize=1000&tenantName=Platform`)).body.data.rows as TenantDto[];
    const platform = rows.find((r) => r.tenantId === '000000')!;
    expect(platform).toBeDefined();
    expect(platform.tenantParent).toBeNull();
    await expectUpdateRefused({ ...writable(platform), tenantName: 'Hijacked', contactPhone: '1' }, 403, '000000');
    await expectUpdateRefused({ ...writable(platform), status: '1', contactPhone: '1' }, 403);
    const del = await root.delete(`${BASE}/${platform.id}`);
    expect(del.status).toBe(403);
    expect(await readTenant(root, platform.id)).toEqual(platform);
    expect((await tenantRow(t, platform.id))!.delFlag).toBe('0');
    // The platform still works.
    expect((await root.get('/auth/me')).status).toBe(200);
  });
});

// ---------------------------------------------------------------- get / delete

describe('get and delete', () => {
  it.each(['abc', '0', '-1', '1.5', '12345678901234567890', '1,2'])('answers 400 for path id %s', async (id) => {
    expect((await root.get(`${BASE}/${id}`)).status).toBe(400);
    const before = await listTotal(root);
    expect((await root.delete(`${BASE}/${id}`)).status).toBe(400);
    expect(await listTotal(root)).toBe(before);
  });

  it('answers 404 for an unknown id', async () => {
    expect((await root.get(`${BASE}/1234567890123456789`)).status).toBe(404);
    expect((await root.get(`${BASE}/9223372036854775807`)).status).toBe(404);
    expect((await root.delete(`${BASE}/1234567890123456789`)).status).toBe(404);
    // 19 digits but beyond int8: well-formed (docs/api-rules.md#limits), so not found rather than invalid.
    const beyond = await root.get(`${BASE}/9223372036854775808`);
    expect(beyond.status).toBe(404);
    expect(beyond.body.msg).toContain('9223372036854775808');
    expect((await root.delete(`${BASE}/9223372036854775808`)).status).toBe(404);
    expect((await put({ ...tenantBody(), id: '9223372036854775808' })).status).toBe(404);
  });

  it('is logical: the row stays with del_flag "2", GET answers 404 and the list hides it', async () => {
    const tenant = await createTenant(root);
    const res = await root.delete(`${BASE}/${tenant.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ code: 200, msg: 'success', data: null });
    const row = await tenantRow(t, tenant.id);
    expect(row).toMatchObject({ tenantId: tenant.tenantId, delFlag: '2', updateBy: 'admin' });
    expect((await root.get(`${BASE}/${tenant.id}`)).status).toBe(404);
    const list = await root.get(`${BASE}/list?tenantName=${encodeURIComponent(tenant.tenantName)}`);
    expect(list.body.data).toEqual({ total: 0, totalExact: true, rows: [] });
    // A second delete finds nothing.
    expect((await root.delete(`${BASE}/${tenant.id}`)).status).toBe(404);
    // Nor can it be a parent any more.
    await expectCreateRefused(tenantBody({ tenantParent: tenant.tenantId }), 400, tenant.tenantId);
  });

  it('is refused (409) while a live child tenant exists, and allowed once the child is deleted', async () => {
    const parent = await createTenant(root);
    const child = await createTenant(root, { tenantParent: parent.tenantId });
    const refused = await root.delete(`${BASE}/${parent.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.msg).toContain(parent.tenantId);
    expect(await readTenant(root, parent.id)).toEqual(parent);
    expect((await tenantRow(t, parent.id))!.delFlag).toBe('0');

    expect((await root.delete(`${BASE}/${child.id}`)).status).toBe(200);
    expect((await root.delete(`${BASE}/${parent.id}`)).status).toBe(200);
    expect((await tenantRow(t, parent.id))!.delFlag).toBe('2');
  });

  it('a grandchild keeps its parent alive, and a disabled child counts as live', async () => {
    const a = await createTenant(root);
    const b = await createTenant(root, { tenantParent: a.tenantId, status: '1' });
    const c = await createTenant(root, { tenantParent: b.tenantId });
    expect((await root.delete(`${BASE}/${a.id}`)).status).toBe(409);
    expect((await root.delete(`${BASE}/${b.id}`)).status).toBe(409);
    expect((await root.delete(`${BASE}/${c.id}`)).status).toBe(200);
    expect((await root.delete(`${BASE}/${b.id}`)).status).toBe(200);
    expect((await root.delete(`${BASE}/${a.id}`)).status).toBe(200);
  });
});

// ---------------------------------------------------------------- list

describe('list', () => {
  let parent: TenantDto;
  let children: TenantDto[];
  const prefix = uniq('Lst');

  beforeAll(async () => {
    parent = await createTenant(root);
    children = [];
    for (let i = 1; i <= 12; i++) {
      children.push(await createTenant(root, { tenantParent: parent.tenantId, tenantName: `${prefix}-${i}`, status: i % 4 === 0 ? '1' : '0' }));
    }
    // A grandchild, matched by name but not by tenantParent.
    await createTenant(root, { tenantParent: children[0]!.tenantId, tenantName: `${prefix}-grand` });
    // A deleted one, matched by nothing.
    const gone = await createTenant(root, { tenantParent: parent.tenantId, tenantName: `${prefix}-gone` });
    expect((await root.delete(`${BASE}/${gone.id}`)).status).toBe(200);
  });

  const list = async (query: string, as: Client = root) => {
    const res = await as.get(`${BASE}/list?${query}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(['rows', 'total', 'totalExact']);
    return res.body.data as { total: number; rows: TenantDto[] };
  };

  it('pages with pageNum and pageSize (default 1 and 10); total counts every match', async () => {
    const first = await list(`tenantParent=${parent.tenantId}`);
    expect(first.total).toBe(12);
    expect(first.rows).toHaveLength(10);
    const second = await list(`tenantParent=${parent.tenantId}&pageNum=2`);
    expect(second.total).toBe(12);
    expect(second.rows).toHaveLength(2);
    const ids = [...first.rows, ...second.rows].map((r) => r.id);
    expect(new Set(ids).size).toBe(12);
    expect(new Set(ids)).toEqual(new Set(children.map((c) => c.id)));

    const page3 = await list(`tenantParent=${parent.tenantId}&pageNum=3&pageSize=5`);
    expect(page3).toMatchObject({ total: 12 });
    expect(page3.rows).toHaveLength(2);
    const beyond = await list(`tenantParent=${parent.tenantId}&pageNum=4&pageSize=5`);
    expect(beyond).toEqual({ total: 12, totalExact: true, rows: [] });
    const all = await list(`tenantParent=${parent.tenantId}&pageSize=1000`);
    expect(all.rows).toHaveLength(12);
    // Paging is stable: pages of 5 concatenate to the whole.
    const paged: string[] = [];
    for (let p = 1; p <= 3; p++) paged.push(...(await list(`tenantParent=${parent.tenantId}&pageNum=${p}&pageSize=5`)).rows.map((r) => r.id));
    expect(paged).toEqual(all.rows.map((r) => r.id));
  });

  it('answers 400 naming pageNum for a page beyond any real list, and ignores empty filters', async () => {
    const res = await root.get('/system/tenant-api/list?pageNum=99999999999999999999');
    expect(res.status).toBe(400);
    expect(res.body.msg).toContain('pageNum');
    const empty = await list(`tenantParent=${parent.tenantId}&tenantName=&status=`);
    expect(empty.total).toBe((await list(`tenantParent=${parent.tenantId}`)).total);
  });

  it('rows are full TenantDTOs', async () => {
    const { rows } = await list(`tenantParent=${parent.tenantId}&pageSize=1000`);
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(DTO_KEYS);
      expect(row).toEqual(children.find((c) => c.id === row.id));
    }
  });

  it('filters by tenantName substring, status and tenantParent, combined', async () => {
    expect((await list(`tenantName=${encodeURIComponent(prefix)}`)).total).toBe(13);
    // "-1" matches 1, 10, 11 and 12.
    const ones = await list(`tenantName=${encodeURIComponent(`${prefix}-1`)}`);
    expect(ones.rows.map((r) => r.tenantName).sort()).toEqual([`${prefix}-1`, `${prefix}-10`, `${prefix}-11`, `${prefix}-12`].sort());
    // A substring in the middle matches too.
    expect((await list(`tenantName=${encodeURIComponent(prefix.slice(2))}`)).total).toBe(13);
    // LIKE wildcards are literal.
    expect((await list(`tenantName=${encodeURIComponent(`${prefix}%`)}`)).total).toBe(0);
    expect((await list(`tenantName=${encodeURIComponent(`${prefix}-_`)}`)).total).toBe(0);
    // Needles too short for the trigram pre-filter (tenant.grams.ts), so only the substring test itself keeps them literal.
    for (const wildcard of ['%', '_'])
      expect((await list(`tenantParent=${parent.tenantId}&tenantName=${encodeURIComponent(wildcard)}`)).total).toBe(0);

    const disabled = await list(`tenantParent=${parent.tenantId}&status=1`);
    expect(disabled.total).toBe(3);
    expect(disabled.rows.every((r) => r.status === '1')).toBe(true);
    expect((await list(`tenantParent=${parent.tenantId}&status=0`)).total).toBe(9);
    const combined = await list(`tenantParent=${parent.tenantId}&status=1&tenantName=${encodeURIComponent(`${prefix}-1`)}`);
    expect(combined.rows.map((r) => r.tenantName)).toEqual([`${prefix}-12`]);
    expect(combined.total).toBe(1);
    expect((await list(`tenantParent=${children[0]!.tenantId}`)).rows.map((r) => r.tenantName)).toEqual([`${prefix}-grand`]);
    expect(await list('tenantParent=999999')).toEqual({ total: 0, totalExact: true, rows: [] });
  });

  it('finds a tenant by any part of its name as written, after a rename by its new name only', async () => {
    // Characters, not bytes: a needle of three characters across emoji and accents.
    const odd = await createTenant(root, { tenantName: `${prefix}-Ünï😀ço` });
    expect((await list(`tenantName=${encodeURIComponent('ï😀ç')}`)).rows.map((r) => r.id)).toEqual([odd.id]);
    // Case as written: LIKE is case-sensitive.
    expect((await list(`tenantName=${encodeURIComponent(`${prefix}-ünï`)}`)).total).toBe(0);
    const renamed = `${prefix}-Zephyr`;
    const res = await put({ id: odd.id, tenantName: renamed, companyName: odd.companyName, contactUserName: 'C', contactPhone: '1' });
    expect(res.status).toBe(200);
    expect((await list(`tenantName=${encodeURIComponent('ï😀ç')}`)).total).toBe(0);
    expect((await list(`tenantName=${encodeURIComponent('Zephyr')}`)).rows.map((r) => r.id)).toEqual([odd.id]);
    // A rare needle is answered from the tenants holding its rarest trigram (sql/013_tenant_name_grams.sql): a
    // tenant whose trigrams were lost is not found by it, while a needle too short for a trigram walks every name.
    await t.sql`DELETE FROM sys_tenant_name_gram WHERE id = ${odd.id}::bigint`;
    expect((await list(`tenantName=${encodeURIComponent('Zephyr')}`)).total).toBe(0);
    expect((await list(`tenantName=yr&pageSize=1000`)).rows.map((r) => r.id)).toContain(odd.id);
    // Writing the same name again does not rewrite the trigrams; another name does.
    await put({ id: odd.id, tenantName: renamed, companyName: odd.companyName, contactUserName: 'C', contactPhone: '1' });
    expect((await list(`tenantName=${encodeURIComponent('Zephyr')}`)).total).toBe(0);
    await put({ id: odd.id, tenantName: `${renamed}!`, companyName: odd.companyName, contactUserName: 'C', contactPhone: '1' });
    expect((await list(`tenantName=${encodeURIComponent('Zephyr')}`)).rows.map((r) => r.id)).toEqual([odd.id]);
    expect((await root.delete(`${BASE}/${odd.id}`)).status).toBe(200);
  });

  it('the service splits a needle into the trigrams the database keeps of a name', async () => {
    for (const name of ['abc', 'ab', '', 'aaaa', 'Tenant 15.', 'Ünï😀ço', '😀😀😀😀', 'a\ud800bc', '%_\\x', 'e\u0301te']) {
      const [row] = await t.sql<{ grams: string[] }[]>`SELECT coalesce(array_agg(g ORDER BY g), '{}') AS grams FROM tenant_name_grams(${name}) g`;
      expect([...gramsOf(name)].sort(), JSON.stringify(name)).toEqual([...row!.grams].sort());
    }
  });

  it('total counts every match, not just the page', async () => {
    const page = await list(`tenantName=${encodeURIComponent(prefix)}&pageSize=2&pageNum=2`);
    expect(page.total).toBe(13);
    expect(page.rows).toHaveLength(2);
  });

  it("the platform's pages by number follow every tenant write at once: a create, a rename, a delete, another node's", async () => {
    // Past the first page the platform's unfiltered list is answered from the live ids and pages the service keeps
    // (src/tenants/tenant.pages.ts); the first page of 1000 walks the table, so the two must agree after every write.
    const size = 3;
    const expectPagesAsWalked = async () => {
      const walked = await list('pageSize=1000');
      const paged: TenantDto[] = [];
      const pages = Math.ceil(walked.rows.length / size);
      for (let n = 2; n <= pages + 1; n++) {
        const page = await list(`pageNum=${n}&pageSize=${size}`);
        expect(page, `page ${n}`).toMatchObject({ total: walked.total, totalExact: true });
        paged.push(...page.rows);
      }
      expect(paged).toEqual(walked.rows.slice(size));
      return walked.rows;
    };
    await expectPagesAsWalked();
    const before = await expectPagesAsWalked(); // the second time from the pages kept

    const created = await createTenant(root, { tenantName: `${prefix}-kept-new` });
    expect((await expectPagesAsWalked()).at(-1)!.id).toBe(created.id);

    const onPage2 = before[size]!;
    const renamed = `${prefix}-kept-renamed`;
    expect((await put({ ...writable(onPage2), tenantName: renamed })).status).toBe(200);
    expect((await list(`pageNum=2&pageSize=${size}`)).rows[0]).toMatchObject({ id: onPage2.id, tenantName: renamed });
    await expectPagesAsWalked();

    expect((await root.delete(`${BASE}/${created.id}`)).status).toBe(200);
    expect((await expectPagesAsWalked()).map((r) => r.id)).not.toContain(created.id);

    // Another node's write reaches this node's next read: the version is the database's, not the process's.
    // That node writes as the service does, the version moved on in the write's transaction (tenant.version.ts).
    const elsewhere = (change: (tx: Tx) => Promise<unknown>) =>
      t.sql.begin(async (tx) => {
        await change(tx);
        await bumpTenantListVersion(tx);
      });
    await elsewhere((tx) => tx`UPDATE sys_tenant SET contact_user_name = 'Written elsewhere' WHERE id = ${onPage2.id}::bigint`);
    expect((await list(`pageNum=2&pageSize=${size}`)).rows[0]).toMatchObject({ id: onPage2.id, contactUserName: 'Written elsewhere' });
    await elsewhere((tx) => tx`UPDATE sys_tenant SET del_flag = '2' WHERE id = ${onPage2.id}::bigint`);
    expect((await list(`pageNum=2&pageSize=${size}`)).rows.map((r) => r.id)).not.toContain(onPage2.id);
    await elsewhere((tx) => tx`UPDATE sys_tenant SET del_flag = '0' WHERE id = ${onPage2.id}::bigint`);
    expect((await expectPagesAsWalked()).map((r) => r.id)).toContain(onPage2.id);
  });

  it('pages by cursor: after= an id holds the tenants after it in id order, counted from there, with the filters', async () => {
    const all = (await list(`tenantParent=${parent.tenantId}&pageSize=1000`)).rows.map((r) => r.id);
    expect(all).toEqual([...all].sort((x, y) => (BigInt(x) < BigInt(y) ? -1 : 1)));
    // Pages of 5 by cursor: the same rows as by pageNum; each total counts what is after the cursor.
    const byCursor: string[] = [];
    let after = '0';
    for (let i = 0; i < 10; i++) {
      const page = await list(`tenantParent=${parent.tenantId}&pageSize=5&after=${after}`);
      expect(page).toMatchObject({ total: 12 - byCursor.length, totalExact: true });
      if (page.rows.length === 0) break;
      byCursor.push(...page.rows.map((r) => r.id));
      after = page.rows.at(-1)!.id;
    }
    expect(byCursor).toEqual(all);
    // pageNum counts pages from the cursor; past the end, no rows and the total after the cursor.
    expect((await list(`tenantParent=${parent.tenantId}&pageSize=3&pageNum=2&after=${all[1]}`)).rows.map((r) => r.id)).toEqual(all.slice(5, 8));
    expect(await list(`tenantParent=${parent.tenantId}&pageSize=3&pageNum=5&after=${all[1]}`)).toEqual({ total: 10, totalExact: true, rows: [] });
    // Filters still apply: the disabled children after the third one.
    const disabled = await list(`tenantParent=${parent.tenantId}&status=1&after=${all[2]}`);
    expect(disabled.rows.map((r) => r.id)).toEqual(children.filter((c) => c.status === '1' && BigInt(c.id) > BigInt(all[2]!)).map((c) => c.id));
    // Any id is a place in the order, a tenant or not; beyond every id, nothing.
    expect((await list(`tenantParent=${parent.tenantId}&after=${BigInt(all[4]!) + 1n}`)).rows.map((r) => r.id)).toEqual(all.slice(5, 12));
    for (const beyond of ['9223372036854775807', '9999999999999999999']) {
      expect(await list(`tenantParent=${parent.tenantId}&after=${beyond}`)).toEqual({ total: 0, totalExact: true, rows: [] });
    }
  });

  it.each([
    'after=abc',
    'after=-1',
    'after=12345678901234567890',
    'pageSize=0',
    'pageSize=1001',
    'pageSize=-1',
    'pageSize=abc',
    'pageNum=0',
    'pageNum=-1',
    'pageNum=1.5',
    'status=2',
    'tenantParent=abc',
    'tenantParent=1234567',
  ])('refuses %s with 400', async (query) => {
    const res = await root.get(`${BASE}/list?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeNull();
    expect(res.body.msg).toContain(query.split('=')[0]!);
  });

  it('accepts pageSize 1 and 1000', async () => {
    expect((await list(`tenantParent=${parent.tenantId}&pageSize=1`)).rows).toHaveLength(1);
    expect((await list(`tenantParent=${parent.tenantId}&pageSize=1000`)).rows).toHaveLength(12);
  });
});

// ---------------------------------------------------------------- scope matrix

describe('scope matrix (roles over the tenant hierarchy)', () => {
  // 000000 ─ P ─┬─ T ─ C
  //             └─ S
  type Target = 'P' | 'T' | 'C' | 'S';
  type CallerName = 'superadmin' | 'adminT' | 'adminC' | 'userT';
  const tenants = {} as Record<Target, TenantDto>;
  const callers = {} as Record<CallerName, Client>;
  const callerUserName = {} as Record<CallerName, string>;
  const prov = {} as Record<Target, TenantWithAdmin>;

  beforeAll(async () => {
    prov.P = await createTenantWithAdmin(t, root);
    prov.T = await createTenantWithAdmin(t, prov.P.admin);
    prov.S = await createTenantWithAdmin(t, prov.P.admin);
    prov.C = await createTenantWithAdmin(t, prov.T.admin);
    for (const k of ['P', 'T', 'C', 'S'] as const) tenants[k] = prov[k].tenant;
    const user = await createUserAndLogin(t, prov.T.admin, prov.T.tenant.tenantId, 'user');
    Object.assign(callers, { superadmin: root, adminT: prov.T.admin, adminC: prov.C.admin, userT: user.client });
    Object.assign(callerUserName, { superadmin: 'admin', adminT: prov.T.username, adminC: prov.C.username, userT: user.userName });
    expect(tenants.T.tenantParent).toBe(tenants.P.tenantId);
    expect(tenants.S.tenantParent).toBe(tenants.P.tenantId);
    expect(tenants.C.tenantParent).toBe(tenants.T.tenantId);
  });

  // visible: GET 200 and listed (else 404 and absent); create: POST with tenantParent = target;
  // update / remove: PUT / DELETE of the target.
  const V = 200;
  const matrix: { caller: CallerName; target: Target; get: number; create: number; update: number; remove: number }[] = [
    { caller: 'superadmin', target: 'P', get: V, create: 200, update: 200, remove: 200 },
    { caller: 'superadmin', target: 'T', get: V, create: 200, update: 200, remove: 200 },
    { caller: 'superadmin', target: 'C', get: V, create: 200, update: 200, remove: 200 },
    { caller: 'superadmin', target: 'S', get: V, create: 200, update: 200, remove: 200 },

    { caller: 'adminT', target: 'P', get: 404, create: 403, update: 404, remove: 404 },
    { caller: 'adminT', target: 'T', get: V, create: 200, update: 403, remove: 403 },
    { caller: 'adminT', target: 'C', get: V, create: 200, update: 200, remove: 200 },
    { caller: 'adminT', target: 'S', get: 404, create: 403, update: 404, remove: 404 },

    { caller: 'adminC', target: 'P', get: 404, create: 403, update: 404, remove: 404 },
    { caller: 'adminC', target: 'T', get: 404, create: 403, update: 404, remove: 404 },
    { caller: 'adminC', target: 'C', get: V, create: 200, update: 403, remove: 403 },
    { caller: 'adminC', target: 'S', get: 404, create: 403, update: 404, remove: 404 },

    { caller: 'userT', target: 'P', get: 404, create: 403, update: 403, remove: 403 },
    { caller: 'userT', target: 'T', get: V, create: 403, update: 403, remove: 403 },
    { caller: 'userT', target: 'C', get: 404, create: 403, update: 403, remove: 403 },
    { caller: 'userT', target: 'S', get: 404, create: 403, update: 403, remove: 403 },
  ];

  it.each(matrix)('$caller on $target: get $get, create-under $create, update $update, delete $remove', async (row) => {
    const as = callers[row.caller];
    const target = tenants[row.target];
    const asRoot = async () => (await root.get(`${BASE}/${target.id}`)).body.data as TenantDto;

    // Read: GET and presence in the list agree.
    const got = await as.get(`${BASE}/${target.id}`);
    expect(got.status).toBe(row.get);
    if (row.get === 200) expect(got.body.data).toEqual(await asRoot());
    else expect(got.body.data).toBeNull();
    const listed = await as.get(`${BASE}/list?pageSize=1000&tenantName=${encodeURIComponent(target.tenantName)}`);
    expect(listed.status).toBe(200);
    expect(listed.body.data.rows.map((r: TenantDto) => r.id)).toEqual(row.get === 200 ? [target.id] : []);
    expect(listed.body.data.total).toBe(row.get === 200 ? 1 : 0);

    // Create under the target.
    const body = tenantBody({ tenantParent: target.tenantId });
    if (row.create === 200) {
      const child = await readTenant(root, locationId(await post(body, as)));
      expect(child).toMatchObject({ tenantParent: target.tenantId, createBy: callerUserName[row.caller] });
      expect((await as.get(`${BASE}/${child.id}`)).status).toBe(200);
      // Leave the target as it was: no extra live child.
      expect((await root.delete(`${BASE}/${child.id}`)).status).toBe(200);
    } else {
      await expectCreateRefused(body, row.create, undefined, as);
    }

    // Update: the full DTO back, with one change.
    const before = await asRoot();
    const change = { ...writable(before), contactUserName: `by ${row.caller}` };
    if (row.update === 200) {
      expect((await put(change, as)).status).toBe(200);
      const after = await asRoot();
      expect(after).toMatchObject({ contactUserName: `by ${row.caller}`, updateBy: callerUserName[row.caller] });
      expect({ ...after, contactUserName: before.contactUserName, updateBy: '', updateTime: null }).toEqual({
        ...before,
        updateBy: '',
        updateTime: null,
      });
    } else {
      await expectUpdateRefused(change, row.update, undefined, as);
    }

    // Delete: refusals are tried on the target itself; a success on a throwaway
    // leaf in the target's place (same parent, so the same relation to the caller).
    if (row.remove === 200) {
      const leaf = await createTenant(root, { tenantParent: target.tenantParent });
      const res = await as.delete(`${BASE}/${leaf.id}`);
      expect(res.status).toBe(200);
      expect((await tenantRow(t, leaf.id))!.delFlag).toBe('2');
      expect((await root.get(`${BASE}/${leaf.id}`)).status).toBe(404);
    } else {
      const snapshot = await asRoot();
      const res = await as.delete(`${BASE}/${target.id}`);
      expect(res.status).toBe(row.remove);
      expect(res.body.data).toBeNull();
      expect(await asRoot()).toEqual(snapshot);
      expect((await tenantRow(t, target.id))!.delFlag).toBe('0');
    }
  });

  it('the visible set of each caller, as the unfiltered list shows it', async () => {
    const codes = (Object.keys(tenants) as Target[]).map((k) => [k, tenants[k].tenantId] as const);
    const visible = async (as: Client) => {
      const { rows, total } = (await as.get(`${BASE}/list?pageSize=1000`)).body.data as { rows: TenantDto[]; total: number };
      expect(rows.length).toBe(Math.min(total, 1000));
      return codes.filter(([, code]) => rows.some((r) => r.tenantId === code)).map(([k]) => k);
    };
    expect(await visible(root)).toEqual(['P', 'T', 'C', 'S']);
    expect(await visible(callers.adminT)).toEqual(['T', 'C']);
    expect(await visible(callers.adminC)).toEqual(['C']);
    expect(await visible(callers.userT)).toEqual(['T']);
    expect(await visible(prov.P.admin)).toEqual(['P', 'T', 'C', 'S']);
    expect(await visible(prov.S.admin)).toEqual(['S']);
    // A user sees exactly its own tenant.
    const mine = (await callers.userT.get(`${BASE}/list?pageSize=1000`)).body.data;
    expect(mine.total).toBe(1);
    expect(mine.rows[0].id).toBe(tenants.T.id);
    // Only superadmin sees the platform tenant.
    const platformVisible = async (as: Client) =>
      ((await as.get(`${BASE}/list?pageSize=1000&tenantName=Platform`)).body.data.rows as TenantDto[]).some((r) => r.tenantId === '000000');
    expect(await platformVisible(root)).toBe(true);
    expect(await platformVisible(callers.adminT)).toBe(false);
    expect(await platformVisible(prov.P.admin)).toBe(false);
  });

  it.each([
    ['superadmin', 400],
    ['adminT', 403],
    ['adminC', 403],
    ['userT', 403],
  ] as const)('%s creating under a nonexistent or deleted code -> %i', async (caller, status) => {
    const gone = await createTenant(root, { tenantParent: tenants.C.tenantId });
    expect((await root.delete(`${BASE}/${gone.id}`)).status).toBe(200);
    for (const code of ['999999', '000001', gone.tenantId]) {
      await expectCreateRefused(tenantBody({ tenantParent: code }), status, undefined, callers[caller]);
    }
  });

  it('a user cannot create even without tenantParent (403), an admin can under its own tenant', async () => {
    await expectCreateRefused(tenantBody(), 403, undefined, callers.userT);
    const own = await createTenant(callers.adminC, {}, root);
    expect(own.tenantParent).toBe(tenants.C.tenantId);
    expect((await callers.adminT.delete(`${BASE}/${own.id}`)).status).toBe(200);
  });

  it('an admin of a strict ancestor two levels up may update and delete', async () => {
    const grandchild = await createTenant(callers.adminC, {}, root);
    expect((await put({ ...writable(grandchild), tenantName: 'by P' }, prov.P.admin)).status).toBe(200);
    expect((await readTenant(root, grandchild.id)).updateBy).toBe(prov.P.username);
    expect((await prov.P.admin.delete(`${BASE}/${grandchild.id}`)).status).toBe(200);
    expect((await tenantRow(t, grandchild.id))!.delFlag).toBe('2');
  });

  it('an admin cannot move a tenant out of scope by repeating another tenantParent (400), nothing changed', async () => {
    const child = await createTenant(callers.adminT, {}, root);
    await expectUpdateRefused({ ...writable(child), tenantParent: tenants.S.tenantId }, 400, 'tenantParent', callers.adminT);
    expect((await callers.adminT.delete(`${BASE}/${child.id}`)).status).toBe(200);
  });
});

// ---------------------------------------------------------------- lifecycle

describe('tenant lifecycle (docs/security.md#sign-in-and-sessions)', () => {
  let parent: TenantWithAdmin;
  beforeAll(async () => {
    parent = await createTenantWithAdmin(t, root);
  });

  const login = (p: TenantWithAdmin) => t.anon.post('/auth/login', { tenantId: p.tenant.tenantId, username: p.username, password: p.password });
  const tokenStatus = async (c: Client) => (await c.get('/auth/me')).status;
  /** PUT the tenant's current state with `patch`, as its parent's admin. */
  const change = async (p: TenantWithAdmin, patch: Record<string, unknown>) => {
    const current = await readTenant(parent.admin, p.tenant.id);
    const res = await put({ ...writable(current), ...patch }, parent.admin);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return readTenant(parent.admin, p.tenant.id);
  };
  const expectTokenRefused = async (c: Client, msg: RegExp) => {
    await expect.poll(() => tokenStatus(c), { timeout: 5_000, interval: 200 }).toBe(401);
    const res = await c.get(`${BASE}/list`);
    expect(res.status).toBe(401);
    expect(res.body.msg).toMatch(msg);
  };
  const expectLoginRefused = async (p: TenantWithAdmin, msg: RegExp) => {
    const res = await login(p);
    expect(res.status).toBe(403);
    expect(res.body.data).toBeNull();
    expect(res.body.msg).toMatch(msg);
  };

  it('disabling refuses the existing token within 5 s and login with 403 "disabled"; re-enabling restores login', async () => {
    const child = await createTenantWithAdmin(t, parent.admin);
    expect(await tokenStatus(child.admin)).toBe(200);
    expect((await change(child, { status: '1' })).status).toBe('1');
    await expectTokenRefused(child.admin, /disabled/);
    await expectLoginRefused(child, /disabled/);
    // The parent's own admin is unaffected.
    expect(await tokenStatus(parent.admin)).toBe(200);

    expect((await change(child, { status: '0' })).status).toBe('0');
    const again = await login(child);
    expect(again.status).toBe(200);
    expect(await tokenStatus(await t.login(child.tenant.tenantId, child.username, child.password))).toBe(200);
  });

  it('an endTime in the past refuses the token and login (403, period ended); today as the last day is fine', async () => {
    const child = await createTenantWithAdmin(t, parent.admin);
    await change(child, { endTime: dayFromToday(-1) });
    await expectTokenRefused(child.admin, /ended/);
    await expectLoginRefused(child, new RegExp(`ended.*${dayFromToday(-1)}|${dayFromToday(-1)}.*ended`));

    await change(child, { startTime: dayFromToday(0), endTime: dayFromToday(0) });
    expect((await login(child)).status).toBe(200);
  });

  it('a startTime in the future refuses login (403) and the token', async () => {
    const child = await createTenantWithAdmin(t, parent.admin);
    await change(child, { startTime: dayFromToday(1) });
    await expectTokenRefused(child.admin, /start/);
    await expectLoginRefused(child, /start/);
    await change(child, { startTime: dayFromToday(-30), endTime: dayFromToday(30) });
    expect((await login(child)).status).toBe(200);
  });

  it('a full-replacement PUT that omits status re-enables the tenant', async () => {
    const child = await createTenantWithAdmin(t, parent.admin);
    await change(child, { status: '1' });
    await expectLoginRefused(child, /disabled/);
    const { status: _status, ...rest } = writable(await readTenant(parent.admin, child.tenant.id));
    expect((await put(rest, parent.admin)).status).toBe(200);
    expect((await readTenant(root, child.tenant.id)).status).toBe('0');
    expect((await login(child)).status).toBe(200);
  });

  it('deleting the tenant refuses the token and login (403, deleted)', async () => {
    const child = await createTenantWithAdmin(t, parent.admin);
    expect(await tokenStatus(child.admin)).toBe(200);
    expect((await parent.admin.delete(`${BASE}/${child.tenant.id}`)).status).toBe(200);
    await expectTokenRefused(child.admin, /deleted/);
    await expectLoginRefused(child, /deleted/);
    expect((await tenantRow(t, child.tenant.id))!.delFlag).toBe('2');
  });

  it("a tenant's own admin cannot lift its own disable or expiry (its token is refused)", async () => {
    const child = await createTenantWithAdmin(t, parent.admin);
    const self = writable(child.tenant);
    expect((await put({ ...self, status: '0' }, child.admin)).status).toBe(403);
    await change(child, { status: '1' });
    expect((await put({ ...self, status: '0' }, child.admin)).status).toBe(401);
    expect((await readTenant(root, child.tenant.id)).status).toBe('1');
  });

  it('accountCount 2 with a provisioned admin allows exactly one more user (409 after)', async () => {
    const p = await createTenantWithAdmin(t, root, { accountCount: 2 });
    const users = () => p.admin.get('/system/user-api/list');
    const first = await p.admin.post('/system/user-api', { userName: 'second', password: PASSWORD, roles: ['user'] });
    expect(first.status).toBe(200);
    const refused = await p.admin.post('/system/user-api', { userName: 'third', password: PASSWORD, roles: ['user'] });
    expect(refused.status).toBe(409);
    expect(refused.body.msg).toMatch(/quota|accountCount/i);
    const names = (await users()).body.data.map((u: { userName: string }) => u.userName).sort();
    expect(names).toEqual([p.username, 'second'].sort());
    // Raising the limit (by the parent) makes room again.
    const current = await readTenant(root, p.tenant.id);
    expect((await put({ ...writable(current), accountCount: 3 })).status).toBe(200);
    expect((await p.admin.post('/system/user-api', { userName: 'third', password: PASSWORD, roles: ['user'] })).status).toBe(200);
    expect((await users()).body.data).toHaveLength(3);
  });

  it('accountCount 1 leaves room for the provisioned admin only', async () => {
    const p = await createTenantWithAdmin(t, root, { accountCount: 1 });
    const res = await p.admin.post('/system/user-api', { userName: 'extra', password: PASSWORD, roles: ['user'] });
    expect(res.status).toBe(409);
    expect((await p.admin.get('/system/user-api/list')).body.data).toHaveLength(1);
  });
});
