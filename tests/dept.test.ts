import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createdId, createUserAndLogin, type Client, type TestApp } from './support/app.js';
import { expectTreeInvariants } from './support/invariants.js';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';

// The department rules (docs/api-rules.md#departments), through HTTP.

let t: TestApp;
let admin: Client;
let tenantId: string;
/** The tenant's admin's userName, as createBy and updateBy record it. */
let adminName: string;
let root: number;
let n = 0;
const unique = (prefix = 'D') => `${prefix}${++n}`;

beforeAll(async () => {
  t = await buildTestApp();
  ({ tenantId, rootDeptId: root, admin, username: adminName } = await createTenantWithAdmin(t));
});
afterAll(async () => t?.close());
afterEach(async () => expectTreeInvariants(t.sql));

async function create(body: Record<string, unknown>, as: Client = admin): Promise<number> {
  return createdId(await as.post('/system/dept-api', { deptName: unique(), parentId: root, ...body }));
}
const get = (id: number, as: Client = admin) => as.get(`/system/dept-api/${id}`);
const dept = async (id: number) => {
  const res = await get(id);
  expect(res.status).toBe(200);
  return res.body.data;
};
const update = (body: Record<string, unknown>, as: Client = admin) => as.put('/system/dept-api', body);

describe('create', () => {
  it('builds ancestors from the parent chain and fills defaults', async () => {
    const top = await create({ parentId: 0, deptName: unique('Top') });
    const child = await create({ parentId: top });
    const grandchild = await create({ parentId: child });
    expect((await dept(top)).ancestors).toBe('0');
    expect((await dept(child)).ancestors).toBe(`0,${top}`);
    const g = await dept(grandchild);
    expect(g).toMatchObject({
      deptId: grandchild,
      parentId: child,
      ancestors: `0,${top},${child}`,
      orderNum: 0,
      leader: null,
      phone: null,
      email: null,
      status: '0',
      delFlag: '0',
      tenantId,
      createBy: adminName,
      updateBy: '',
      updateTime: null,
    });
    expect(g.createTime).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it('stores every field sent and trims the name', async () => {
    const id = await create({
      deptName: '  Trimmed  ',
      orderNum: 3,
      leader: 'Li Lei',
      phone: '+86 138-0013-8000',
      email: 'a@b.co',
      status: '1',
      delFlag: '0',
      tenantId,
    });
    expect(await dept(id)).toMatchObject({
      deptName: 'Trimmed',
      orderNum: 3,
      leader: 'Li Lei',
      phone: '+86 138-0013-8000',
      email: 'a@b.co',
      status: '1',
    });
  });

  it.each([
    ['missing deptName', { deptName: undefined }, 'deptName'],
    ['missing parentId', { parentId: undefined }, 'parentId'],
    ['blank deptName', { deptName: '   ' }, 'deptName'],
    ['deptName over 100', { deptName: 'x'.repeat(101) }, 'deptName'],
    ['negative orderNum', { orderNum: -1 }, 'orderNum'],
    ['fractional orderNum', { orderNum: 1.5 }, 'orderNum'],
    ['leader over 100', { leader: 'x'.repeat(101) }, 'leader'],
    ['phone with letters', { phone: '138abc' }, 'phone'],
    ['phone over 20', { phone: '1'.repeat(21) }, 'phone'],
    ['invalid email', { email: 'not-an-email' }, 'email'],
    ['email over 50', { email: `${'a'.repeat(45)}@b.com` }, 'email'],
    ['status 2', { status: '2' }, 'status'],
    ['delFlag 2', { delFlag: '2' }, 'delFlag'],
    ['negative parentId', { parentId: -1 }, 'parentId'],
  ])('refuses %s with 400 naming the field', async (_name, patch, field) => {
    const before = (await admin.get('/system/dept-api/list')).body.data.length;
    const body: Record<string, unknown> = { deptName: unique(), parentId: root, ...patch };
    for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
    const res = await admin.post('/system/dept-api', body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(400);
    expect(res.body.msg).toContain(field);
    expect((await admin.get('/system/dept-api/list')).body.data.length).toBe(before);
  });

  it('refuses a parent that does not exist, is deleted, or belongs to another tenant (400)', async () => {
    const gone = await create({});
    expect((await admin.delete(`/system/dept-api/${gone}`)).status).toBe(200);
    const other = await createTenantWithAdmin(t);
    for (const parentId of [987654, gone, other.rootDeptId]) {
      const res = await admin.post('/system/dept-api', { parentId, deptName: unique() });
      expect(res.status).toBe(400);
      expect(res.body.msg).toContain(`parentId ${parentId}`);
    }
  });

  it('refuses a child under a disabled parent (409)', async () => {
    const disabled = await create({ status: '1' });
    const res = await admin.post('/system/dept-api', { parentId: disabled, deptName: unique() });
    expect(res.status).toBe(409);
    expect(res.body.msg).toMatch(/disabled/);
  });

  it('keeps live sibling names unique, but allows the name elsewhere and after deletion', async () => {
    const parent = await create({});
    await create({ parentId: parent, deptName: 'Sales' });
    const dup = await admin.post('/system/dept-api', { parentId: parent, deptName: ' Sales ' });
    expect(dup.status).toBe(409);
    expect(dup.body.msg).toMatch(/deptName/);
    await create({ parentId: root, deptName: 'Sales' });
    const again = await admin.post('/system/dept-api', { parentId: parent, deptName: 'Sales' });
    expect(again.status).toBe(409);
    const list = (await admin.get(`/system/dept-api/list?parentId=${parent}`)).body.data;
    await admin.delete(`/system/dept-api/${list[0].deptId}`);
    expect((await admin.post('/system/dept-api', { parentId: parent, deptName: 'Sales' })).status).toBe(200);
  });

  it("refuses a tenantId other than the caller's (403) and accepts its own", async () => {
    const res = await admin.post('/system/dept-api', { parentId: root, deptName: unique(), tenantId: '000000' });
    expect(res.status).toBe(403);
    expect((await admin.post('/system/dept-api', { parentId: root, deptName: unique(), tenantId })).status).toBe(200);
  });

  it('takes JSON types as sent: no number for a string, null stays null; an id either way', async () => {
    for (const body of [
      { deptName: 5 },
      { deptName: unique(), parentId: `0${root}` },
      { deptName: unique(), parentId: 1.5 },
      { deptName: unique(), status: 0 },
      { deptName: unique(), leader: 7 },
    ]) {
      expect((await admin.post('/system/dept-api', { parentId: root, ...body })).status).toBe(400);
    }
    // An id as a decimal string is the same id (docs/api-rules.md#ids): the department answers with a number.
    const byString = await create({ parentId: String(root) });
    expect(await dept(byString)).toMatchObject({ parentId: root, deptId: byString });
    const id = await create({ leader: null, phone: null, email: null });
    const read = await dept(id);
    expect(read).toMatchObject({ leader: null, phone: null, email: null });
    // A client that PUTs back what it read changes nothing.
    expect((await update(read)).status).toBe(200);
    expect(await dept(id)).toMatchObject({ leader: null, phone: null, email: null, deptName: read.deptName });
  });

  it('counts deptName in characters, not UTF-16 units', async () => {
    const id = await create({ deptName: '😀'.repeat(100) });
    expect((await dept(id)).deptName).toBe('😀'.repeat(100));
    expect((await admin.post('/system/dept-api', { parentId: root, deptName: '😀'.repeat(101) })).status).toBe(400);
  });

  it('takes a deptName of 100 characters (a directory group name) on create, update and the list filter; 101 is 400', async () => {
    const long = `${unique('Long')} ${'n'.repeat(100)}`.slice(0, 100);
    expect(long).toHaveLength(100);
    const id = await create({ deptName: long });
    expect((await dept(id)).deptName).toBe(long);
    const listed = await admin.get(`/system/dept-api/list?deptName=${encodeURIComponent(long)}`);
    expect(listed.body.data.map((d: { deptId: number }) => d.deptId)).toEqual([id]);
    const renamed = `${long.slice(0, 99)}r`;
    expect((await update({ deptId: id, parentId: root, deptName: renamed })).status).toBe(200);
    expect((await dept(id)).deptName).toBe(renamed);
    const tooLong = await update({ deptId: id, parentId: root, deptName: `${renamed}x` });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.msg).toContain('deptName');
    expect((await dept(id)).deptName).toBe(renamed);
  });

  it('ignores server-generated fields sent by the client', async () => {
    const id = createdId(await admin.post('/system/dept-api', { parentId: root, deptName: unique(), deptId: 5, ancestors: '9,9' }));
    expect(id).not.toBe(5);
    expect((await dept(id)).ancestors).toBe(`0,${root}`);
  });
});

describe('times', () => {
  it('are YYYY-MM-DD HH:mm:ss in the server time zone (TZ)', async () => {
    const id = await create({});
    const saved = process.env.TZ;
    try {
      process.env.TZ = 'UTC';
      const utc = (await dept(id)).createTime as string;
      process.env.TZ = 'Asia/Shanghai';
      const shanghai = (await dept(id)).createTime as string;
      const hours = (Date.parse(shanghai.replace(' ', 'T') + 'Z') - Date.parse(utc.replace(' ', 'T') + 'Z')) / 3_600_000;
      expect(hours).toBe(8);
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});

describe('get', () => {
  it.each(['abc', '0', '-1', '1.5', '12345678901234567890', '00000000000000000000'])('answers 400 for path id %s', async (id) => {
    const res = await admin.get(`/system/dept-api/${id}`);
    expect(res.status).toBe(400);
  });

  it('answers 404 naming the exact id for valid ids beyond 2^53, without rounding', async () => {
    for (const id of ['9007199254740993', '1234567890123456789', '9223372036854775807', '9223372036854775808']) {
      const res = await admin.get(`/system/dept-api/${id}`);
      expect(res.status).toBe(404);
      expect(res.body.msg).toContain(id);
    }
    const batch = await admin.delete(`/system/dept-api/${root},9007199254740993`);
    expect(batch.status).toBe(404);
    expect(batch.body.msg).toContain('9007199254740993');
    expect((await get(root)).status).toBe(200);
  });

  it('answers 404 for unknown and deleted departments', async () => {
    expect((await get(9_000_000)).status).toBe(404);
    const id = await create({});
    await admin.delete(`/system/dept-api/${id}`);
    expect((await get(id)).status).toBe(404);
  });
});

describe('update', () => {
  it('is a full replacement and records who updated', async () => {
    const id = await create({ orderNum: 5, leader: 'L', phone: '123', email: 'x@y.zz', status: '1' });
    const res = await update({ deptId: id, parentId: root, deptName: 'Replaced' });
    expect(res.status).toBe(200);
    expect(res.body.data).toBeNull();
    const d = await dept(id);
    expect(d).toMatchObject({ deptName: 'Replaced', orderNum: 0, leader: null, phone: null, email: null, status: '0', updateBy: adminName });
    expect(d.updateTime).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it('requires deptId (400) and a live department (404)', async () => {
    expect((await update({ parentId: root, deptName: 'X' })).status).toBe(400);
    expect((await update({ deptId: 8_888_888, parentId: root, deptName: 'X' })).status).toBe(404);
    const gone = await create({});
    await admin.delete(`/system/dept-api/${gone}`);
    expect((await update({ deptId: gone, parentId: root, deptName: 'X' })).status).toBe(404);
  });

  it('recomputes ancestors of the department and its whole subtree on a move', async () => {
    const a = await create({});
    const b = await create({ parentId: a });
    const c = await create({ parentId: b });
    const d = await create({ parentId: c });
    const target = await create({});
    const bd = await dept(b);
    expect((await update({ ...bd, parentId: target })).status).toBe(200);
    expect((await dept(b)).ancestors).toBe(`0,${root},${target}`);
    expect((await dept(c)).ancestors).toBe(`0,${root},${target},${b}`);
    expect((await dept(d)).ancestors).toBe(`0,${root},${target},${b},${c}`);
    expect((await update({ ...(await dept(b)), parentId: 0 })).status).toBe(200);
    expect((await dept(d)).ancestors).toBe(`0,${b},${c}`);
  });

  it('refuses to make a department its own ancestor (409), directly or through descendants', async () => {
    const a = await create({});
    const b = await create({ parentId: a });
    const c = await create({ parentId: b });
    const self = await update({ ...(await dept(a)), parentId: a });
    expect(self.status).toBe(409);
    for (const under of [b, c]) {
      const res = await update({ ...(await dept(a)), parentId: under });
      expect(res.status).toBe(409);
      expect(res.body.msg).toMatch(/descendant/);
    }
    expect((await dept(a)).parentId).toBe(root);
  });

  it("refuses a parent that is unknown, deleted or another tenant's (400)", async () => {
    const a = await create({});
    const gone = await create({});
    await admin.delete(`/system/dept-api/${gone}`);
    const other = await createTenantWithAdmin(t);
    for (const parentId of [7_777_777, gone, other.rootDeptId]) {
      expect((await update({ ...(await dept(a)), parentId })).status).toBe(400);
    }
    expect((await dept(a)).parentId).toBe(root);
  });

  it('refuses to enable a department under a disabled parent, or to move an enabled one there (409)', async () => {
    const parent = await create({});
    const child = await create({ parentId: parent, status: '1' });
    expect((await update({ ...(await dept(parent)), status: '1' })).status).toBe(200);
    const enable = await update({ ...(await dept(child)), status: '0' });
    expect(enable.status).toBe(409);
    expect((await dept(child)).status).toBe('1');
    const elsewhere = await create({});
    const move = await update({ ...(await dept(elsewhere)), parentId: parent });
    expect(move.status).toBe(409);
    expect((await update({ ...(await dept(elsewhere)), parentId: parent, status: '1' })).status).toBe(200);
  });

  it('refuses to disable a department with an enabled child (409)', async () => {
    const parent = await create({});
    const child = await create({ parentId: parent });
    const res = await update({ ...(await dept(parent)), status: '1' });
    expect(res.status).toBe(409);
    expect(res.body.msg).toContain(String(child));
    expect((await dept(parent)).status).toBe('0');
  });

  it('refuses a duplicate sibling name (409) and another tenantId (403)', async () => {
    const parent = await create({});
    await create({ parentId: parent, deptName: 'Same' });
    const other = await create({ parentId: parent, deptName: 'Other' });
    expect((await update({ ...(await dept(other)), deptName: 'Same' })).status).toBe(409);
    const moving = await create({ deptName: 'Same' });
    expect((await update({ ...(await dept(moving)), parentId: parent })).status).toBe(409);
    expect((await update({ ...(await dept(other)), tenantId: '000000' })).status).toBe(403);
    expect((await dept(other)).deptName).toBe('Other');
  });

  it('refuses delFlag other than "0" (400)', async () => {
    const id = await create({});
    expect((await update({ ...(await dept(id)), delFlag: '2' })).status).toBe(400);
    expect((await get(id)).status).toBe(200);
  });
});

describe('delete', () => {
  it('is logical: the row stays with delFlag "2" and disappears from reads', async () => {
    const id = await create({});
    const res = await admin.delete(`/system/dept-api/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toBeNull();
    const [row] = await t.sql`SELECT del_flag, update_by FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${id}`;
    expect(row).toEqual({ del_flag: '2', update_by: adminName });
    expect((await admin.get('/system/dept-api/list')).body.data.map((d: { deptId: number }) => d.deptId)).not.toContain(id);
    expect((await admin.delete(`/system/dept-api/${id}`)).status).toBe(404);
  });

  it('refuses a department with a live child, naming it (409)', async () => {
    const parent = await create({ deptName: unique('Parent') });
    await create({ parentId: parent });
    const res = await admin.delete(`/system/dept-api/${parent}`);
    expect(res.status).toBe(409);
    expect(res.body.msg).toContain((await dept(parent)).deptName);
  });

  it('allows deleting a parent once its children are deleted', async () => {
    const parent = await create({});
    const child = await create({ parentId: parent });
    expect((await admin.delete(`/system/dept-api/${child}`)).status).toBe(200);
    expect((await admin.delete(`/system/dept-api/${parent}`)).status).toBe(200);
  });

  it('refuses a department with a live user, naming it (409)', async () => {
    const id = await create({ deptName: unique('Staffed') });
    const user = await createUserAndLogin(t, admin, tenantId, 'user', { deptId: id });
    const res = await admin.delete(`/system/dept-api/${id}`);
    expect(res.status).toBe(409);
    expect(res.body.msg).toMatch(/users/);
    expect(res.body.msg).toContain((await dept(id)).deptName);
    expect((await admin.delete(`/system/user-api/${user.userId}`)).status).toBe(200);
    expect((await admin.delete(`/system/dept-api/${id}`)).status).toBe(200);
  });

  it('batch: deletes all, ignoring duplicates', async () => {
    const ids = [await create({}), await create({}), await create({})];
    expect((await admin.delete(`/system/dept-api/${ids.join(',')},${ids[0]}`)).status).toBe(200);
    for (const id of ids) expect((await get(id)).status).toBe(404);
  });

  it('batch: all or nothing when one id is unknown (404) or has a child (409)', async () => {
    const a = await create({});
    const b = await create({});
    const missing = await admin.delete(`/system/dept-api/${a},${b},6666666`);
    expect(missing.status).toBe(404);
    expect(missing.body.msg).toContain('6666666');
    const withChild = await create({});
    await create({ parentId: withChild });
    const blocked = await admin.delete(`/system/dept-api/${a},${withChild},${b}`);
    expect(blocked.status).toBe(409);
    expect(blocked.body.msg).toContain(String(withChild));
    expect((await get(a)).status).toBe(200);
    expect((await get(b)).status).toBe(200);
  });

  it('batch: refuses more than 1000 ids and malformed lists (400)', async () => {
    const many = Array.from({ length: 1001 }, (_, i) => i + 1).join(',');
    expect((await admin.delete(`/system/dept-api/${many}`)).status).toBe(400);
    expect((await admin.delete('/system/dept-api/1,,2')).status).toBe(400);
    expect((await admin.delete('/system/dept-api/1,x')).status).toBe(400);
  });
});

describe('reads: list, tree and the choices of a new parent', () => {
  it('list filters by name substring, status and parentId, ordered by parentId, orderNum, deptId', async () => {
    const parent = await create({ deptName: unique('ListParent') });
    const b = await create({ parentId: parent, deptName: 'Zeta 100%', orderNum: 2 });
    const a = await create({ parentId: parent, deptName: 'Alpha', orderNum: 1 });
    const c = await create({ parentId: parent, deptName: 'Beta', orderNum: 2, status: '1' });
    const under = (await admin.get(`/system/dept-api/list?parentId=${parent}`)).body.data.map((d: { deptId: number }) => d.deptId);
    expect(under).toEqual([a, b, c]);
    const disabled = (await admin.get(`/system/dept-api/list?parentId=${parent}&status=1`)).body.data;
    expect(disabled.map((d: { deptId: number }) => d.deptId)).toEqual([c]);
    const percent = (await admin.get(`/system/dept-api/list?deptName=${encodeURIComponent('100%')}`)).body.data;
    expect(percent.map((d: { deptId: number }) => d.deptId)).toEqual([b]);
    // Wildcards are literal: '%' is in one name under the parent, '_' in none.
    const named = async (needle: string) =>
      (await admin.get(`/system/dept-api/list?parentId=${parent}&deptName=${encodeURIComponent(needle)}`)).body.data.map(
        (d: { deptId: number }) => d.deptId,
      );
    expect(await named('%')).toEqual([b]);
    expect(await named('_')).toEqual([]);
    const all = (await admin.get('/system/dept-api/list')).body.data as { parentId: number; orderNum: number; deptId: number }[];
    const sorted = [...all].sort((x, y) => x.parentId - y.parentId || x.orderNum - y.orderNum || x.deptId - y.deptId);
    expect(all).toEqual(sorted);
    expect((await admin.get('/system/dept-api/list?status=7')).status).toBe(400);
    const huge = await admin.get('/system/dept-api/list?parentId=9999999999999999999');
    expect(huge.status).toBe(400);
    expect(huge.body.msg).toContain('parentId');
    // Empty filters, as RuoYi front ends send them, mean "no filter".
    const empty = await admin.get('/system/dept-api/list?deptName=&status=&parentId=');
    expect(empty.status).toBe(200);
    expect(empty.body.data).toEqual(all);
  });

  it('tree nests live departments under their parents', async () => {
    const top = await create({ parentId: 0, deptName: unique('TreeTop') });
    const kid = await create({ parentId: top });
    const gone = await create({ parentId: top });
    await admin.delete(`/system/dept-api/${gone}`);
    const tree = (await admin.get('/system/dept-api/tree')).body.data as { deptId: number; children: { deptId: number; children: unknown[] }[] }[];
    const node = tree.find((x) => x.deptId === top)!;
    expect(node.children.map((c) => c.deptId)).toEqual([kid]);
    expect(node.children[0]!.children).toEqual([]);
    expect(tree.find((x) => x.deptId === root)).toBeTruthy();
  });

  it('list/exclude/{id} offers every live department but the one and its descendants', async () => {
    const a = await create({});
    const b = await create({ parentId: a });
    const c = await create({ parentId: b });
    const sibling = await create({});
    const res = await admin.get(`/system/dept-api/list/exclude/${a}`);
    expect(res.status).toBe(200);
    const ids = res.body.data.map((d: { deptId: number }) => d.deptId);
    expect(ids).not.toContain(a);
    expect(ids).not.toContain(b);
    expect(ids).not.toContain(c);
    expect(ids).toContain(sibling);
    expect(ids).toContain(root);
    expect((await admin.get('/system/dept-api/list/exclude/5555555')).status).toBe(404);
  });
});

describe('tenant isolation', () => {
  it("answers 404 to every read and write of another tenant's department and never lists it", async () => {
    const mine = await create({ deptName: unique('Mine') });
    const other = await createTenantWithAdmin(t);
    const them = other.admin;
    expect((await them.get(`/system/dept-api/${mine}`)).status).toBe(404);
    expect((await them.get(`/system/dept-api/list/exclude/${mine}`)).status).toBe(404);
    expect((await them.put('/system/dept-api', { deptId: mine, parentId: 0, deptName: 'Hijack' })).status).toBe(404);
    expect((await them.delete(`/system/dept-api/${mine}`)).status).toBe(404);
    expect((await them.delete(`/system/dept-api/${other.rootDeptId},${mine}`)).status).toBe(404);
    const theirList = (await them.get('/system/dept-api/list')).body.data.map((d: { deptId: number }) => d.deptId);
    expect(theirList).toEqual([other.rootDeptId]);
    const theirTree = (await them.get('/system/dept-api/tree')).body.data;
    expect(theirTree).toHaveLength(1);
    expect(await dept(mine)).toMatchObject({ deptName: expect.stringMatching(/^Mine/), delFlag: '0' });
    expect((await get(other.rootDeptId)).status).toBe(404);
  });

  it('lets a tenant reuse names another tenant uses', async () => {
    const other = await createTenantWithAdmin(t);
    await create({ parentId: 0, deptName: 'Shared' });
    expect((await other.admin.post('/system/dept-api', { parentId: 0, deptName: 'Shared' })).status).toBe(200);
  });
});

describe('roles', () => {
  it('lets a user read departments but not write them (403, nothing changed)', async () => {
    const { client } = await createUserAndLogin(t, admin, tenantId, 'user');
    const id = await create({});
    expect((await client.get(`/system/dept-api/${id}`)).status).toBe(200);
    expect((await client.get('/system/dept-api/list')).status).toBe(200);
    expect((await client.get('/system/dept-api/tree')).status).toBe(200);
    expect((await client.post('/system/dept-api', { parentId: root, deptName: 'Nope' })).status).toBe(403);
    expect((await client.put('/system/dept-api', { ...(await dept(id)), deptName: 'Nope' })).status).toBe(403);
    expect((await client.delete(`/system/dept-api/${id}`)).status).toBe(403);
    expect((await dept(id)).deptName).not.toBe('Nope');
  });
});
