import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildTestApp, createdId, createUserAndLogin, type Client, type Reply, type TestApp } from './support/app.js';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';

// docs/api-rules.md#users: /system/user-api. Accounts of the caller's own tenant,
// managed by its admins; the password is write-only; userName unique among
// the tenant's live users; accountCount holds under concurrent creates.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

const PASSWORD = 'password-123';
const uniqueName = (prefix = 'u') => `${prefix}_${Math.random().toString(36).slice(2, 10)}`;

interface UserDto {
  userId: number;
  tenantId: string;
  deptId: number | null;
  userName: string;
  nickName: string;
  email: string | null;
  phonenumber: string | null;
  status: string;
  delFlag: string;
  roles: string[];
  createBy: string;
  createTime: string;
  updateBy: string;
  updateTime: string | null;
}

async function createUser(admin: Client, extra: Record<string, unknown> = {}) {
  const userName = uniqueName();
  const res = await admin.post('/system/user-api', { userName, password: PASSWORD, roles: ['user'], ...extra });
  return { userId: createdId(res), userName: (extra.userName as string | undefined) ?? userName };
}

async function createDept(admin: Client, parentId: number, deptName = uniqueName('D')) {
  return createdId(await admin.post('/system/dept-api', { parentId, deptName }));
}

/** The raw row, deleted or not. */
async function row(tenantId: string, userId: number) {
  const [r] = await t.sql<{ deptId: number | null; userName: string; delFlag: string; status: string; role: string; passwordHash: string }[]>`
    SELECT dept_id AS "deptId", user_name AS "userName", del_flag AS "delFlag", status, role, password_hash AS "passwordHash"
    FROM sys_user WHERE tenant_id = ${tenantId} AND user_id = ${userId}`;
  return r;
}

async function liveCount(tenantId: string): Promise<number> {
  const [r] = await t.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sys_user WHERE tenant_id = ${tenantId} AND del_flag = '0'`;
  return r!.n;
}

async function liveWithName(tenantId: string, userName: string): Promise<number> {
  const [r] = await t.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM sys_user WHERE tenant_id = ${tenantId} AND user_name = ${userName} AND del_flag = '0'`;
  return r!.n;
}

function expectStatus(res: Reply, status: number, msg?: RegExp) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.code).toBe(status);
  if (status !== 200) expect(res.body.data).toBeNull();
  if (msg) expect(res.body.msg).toMatch(msg);
}

const ids = (res: Reply<UserDto[]>) => res.body.data.map((u) => u.userId);

describe('create, read, update, delete', () => {
  it('creates a user with defaults and reads it back', async () => {
    const b = await createTenantWithAdmin(t);
    const userName = uniqueName();
    const res = await b.admin.post('/system/user-api', { userName, password: PASSWORD, roles: ['user'] });
    expectStatus(res, 200);
    expect(res.body.data).toBeNull();
    const userId = createdId(res);
    expect(res.headers.location).toBe(`/system/user-api/${userId}`);

    const got = await b.admin.get<UserDto>(`/system/user-api/${userId}`);
    expectStatus(got, 200);
    expect(got.body.data).toEqual({
      userId,
      tenantId: b.tenantId,
      deptId: null,
      userName,
      nickName: '',
      email: null,
      phonenumber: null,
      status: '0',
      delFlag: '0',
      roles: ['user'],
      createBy: b.username,
      createTime: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
      updateBy: '',
      updateTime: null,
    });
    // The new account can log in.
    expect((await t.anon.post('/auth/login', { tenantId: b.tenantId, username: userName, password: PASSWORD })).status).toBe(200);
  });

  it('creates with every field', async () => {
    const b = await createTenantWithAdmin(t);
    const body = {
      userName: uniqueName(),
      password: PASSWORD,
      roles: ['admin'],
      deptId: b.rootDeptId,
      nickName: 'Nick',
      email: 'nick@example.com',
      phonenumber: '+86 138-0000-0000',
      status: '1',
    };
    const userId = createdId(await b.admin.post('/system/user-api', body));
    const got = await b.admin.get<UserDto>(`/system/user-api/${userId}`);
    expect(got.body.data).toMatchObject({
      userId,
      deptId: b.rootDeptId,
      userName: body.userName,
      nickName: 'Nick',
      email: 'nick@example.com',
      phonenumber: '+86 138-0000-0000',
      status: '1',
      roles: ['admin'],
    });
  });

  it('rejects invalid fields with 400 naming them, creating nothing', async () => {
    const b = await createTenantWithAdmin(t);
    const base = { password: PASSWORD, roles: ['user'] };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...base, userName: '' }, /userName/],
      [{ ...base, userName: 'has space' }, /userName/],
      // Up to 100 characters (identity providers send e-mail addresses as login names); 101 is too long.
      [{ ...base, userName: 'x'.repeat(101) }, /userName/],
      [{ ...base, userName: uniqueName(), email: `${'e'.repeat(243)}@example.com` }, /email/],
      [{ ...base, userName: uniqueName(), email: 'not-an-email' }, /email/],
      [{ ...base, userName: uniqueName(), phonenumber: 'call me' }, /phonenumber/],
      [{ ...base, userName: uniqueName(), status: '2' }, /status/],
      [{ ...base, userName: uniqueName(), deptId: -1 }, /deptId/],
      [{ roles: ['user'], userName: uniqueName() }, /password/],
      // JSON types are taken as sent: no coercion of numbers, scalars or nulls.
      [{ ...base, userName: uniqueName(), deptId: 0 }, /deptId/],
      [{ ...base, userName: uniqueName(), deptId: '5' }, /deptId/],
      [{ password: PASSWORD, roles: 'user', userName: uniqueName() }, /roles/],
      [{ ...base, userName: uniqueName(), status: 1 }, /status/],
      [{ ...base, userName: uniqueName(), nickName: null }, /nickName/],
      // Up to 100 characters (a directory's display name); 101 is too long.
      [{ ...base, userName: uniqueName(), nickName: 'n'.repeat(101) }, /nickName/],
      [{ ...base, userName: 12345678 }, /userName/],
      [{ ...base, userName: uniqueName(), delFlag: '2' }, /delFlag/],
    ];
    for (const [body, msg] of cases) expectStatus(await b.admin.post('/system/user-api', body), 400, msg);
    expect(await liveCount(b.tenantId)).toBe(1);
  });

  it('takes a userName of up to 100 characters and an email of up to 254, and that user logs in', async () => {
    const b = await createTenantWithAdmin(t);
    const userName = `${'n'.repeat(88)}@example.com`;
    const email = `${'m'.repeat(242)}@example.com`;
    expect([userName.length, email.length]).toEqual([100, 254]);
    const id = createdId(await b.admin.post('/system/user-api', { userName, email, password: PASSWORD, roles: ['user'] }));
    expect((await b.admin.get(`/system/user-api/${id}`)).body.data).toMatchObject({ userName, email });
    expect((await t.anon.post('/auth/login', { tenantId: b.tenantId, username: userName, password: PASSWORD })).status).toBe(200);
  });

  it('takes a nickName of up to 100 characters, counted in characters, on create and update', async () => {
    const b = await createTenantWithAdmin(t);
    const nickName = 'n'.repeat(100);
    const { userId, userName } = await createUser(b.admin, { nickName });
    expect((await b.admin.get<UserDto>(`/system/user-api/${userId}`)).body.data.nickName).toBe(nickName);
    const emoji = '😀'.repeat(100);
    expectStatus(await b.admin.put('/system/user-api', { userId, userName, roles: ['user'], nickName: emoji }), 200);
    expect((await b.admin.get<UserDto>(`/system/user-api/${userId}`)).body.data.nickName).toBe(emoji);
    expectStatus(await b.admin.put('/system/user-api', { userId, userName, roles: ['user'], nickName: `${emoji}😀` }), 400, /nickName/);
    expect((await b.admin.get<UserDto>(`/system/user-api/${userId}`)).body.data.nickName).toBe(emoji);
  });

  it("refuses a tenantId other than the caller's (403) on create and update, and accepts its own", async () => {
    const b = await createTenantWithAdmin(t);
    expectStatus(
      await b.admin.post('/system/user-api', { userName: uniqueName(), password: PASSWORD, roles: ['user'], tenantId: '000000' }),
      403,
      /tenantId/,
    );
    expect(await liveCount(b.tenantId)).toBe(1);
    expect(await liveCount('000000')).toBeGreaterThan(0);
    const { userId, userName } = await createUser(b.admin, { tenantId: b.tenantId });
    expectStatus(await b.admin.put('/system/user-api', { userId, userName, roles: ['user'], tenantId: '000000', nickName: 'moved' }), 403);
    expect((await b.admin.get(`/system/user-api/${userId}`)).body.data.nickName).not.toBe('moved');
  });

  it('PUT is a full replacement: omitted fields return to their defaults', async () => {
    const b = await createTenantWithAdmin(t);
    const { userId, userName } = await createUser(b.admin, {
      deptId: b.rootDeptId,
      nickName: 'Before',
      email: 'before@example.com',
      phonenumber: '123',
      status: '1',
    });
    const renamed = uniqueName();
    expectStatus(await b.admin.put('/system/user-api', { userId, userName: renamed, roles: ['admin'] }), 200);
    const got = await b.admin.get<UserDto>(`/system/user-api/${userId}`);
    expect(got.body.data).toMatchObject({
      userId,
      userName: renamed,
      deptId: null,
      nickName: '',
      email: null,
      phonenumber: null,
      status: '0',
      roles: ['admin'],
      updateBy: b.username,
      createBy: b.username,
    });
    expect(got.body.data.updateTime).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    // The password was not sent, so it is unchanged; the old name no longer logs in.
    expect((await t.anon.post('/auth/login', { tenantId: b.tenantId, username: renamed, password: PASSWORD })).status).toBe(200);
    expect((await t.anon.post('/auth/login', { tenantId: b.tenantId, username: userName, password: PASSWORD })).status).toBe(401);
  });

  it('PUT of an unknown or deleted user is 404', async () => {
    const b = await createTenantWithAdmin(t);
    const { userId, userName } = await createUser(b.admin);
    expectStatus(await b.admin.delete(`/system/user-api/${userId}`), 200);
    expectStatus(await b.admin.put('/system/user-api', { userId, userName, roles: ['user'], nickName: 'Ghost' }), 404);
    expectStatus(await b.admin.put('/system/user-api', { userId: 99999999, userName: uniqueName(), roles: ['user'] }), 404);
    expect((await row(b.tenantId, userId))?.delFlag).toBe('2');
    expect(await liveWithName(b.tenantId, userName)).toBe(0);
  });

  it('DELETE is logical: the user disappears from reads but the row stays', async () => {
    const b = await createTenantWithAdmin(t);
    const { userId } = await createUser(b.admin);
    expectStatus(await b.admin.delete(`/system/user-api/${userId}`), 200);
    expectStatus(await b.admin.get(`/system/user-api/${userId}`), 404);
    expect(ids(await b.admin.get('/system/user-api/list'))).not.toContain(userId);
    expect((await row(b.tenantId, userId))?.delFlag).toBe('2');
    expectStatus(await b.admin.delete(`/system/user-api/${userId}`), 404);
  });

  it('400 for a path id that is not a positive integer', async () => {
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
      expectStatus(await t.root.get(`/system/user-api/${bad}`), 400);
    }
    expectStatus(await t.root.get('/system/user-api/99999999'), 404);
  });
});

describe('list', () => {
  it('filters by deptId, userName substring and status, in userId order', async () => {
    const b = await createTenantWithAdmin(t);
    const d1 = await createDept(b.admin, b.rootDeptId);
    const d2 = await createDept(b.admin, b.rootDeptId);
    const tag = Math.random().toString(36).slice(2, 7);
    const a = await createUser(b.admin, { userName: `alpha_${tag}`, deptId: d1 });
    const c = await createUser(b.admin, { userName: `beta_${tag}`, deptId: d2, status: '1' });
    const e = await createUser(b.admin, { userName: `alphabet_${tag}`, deptId: d1, status: '1' });

    const all = await b.admin.get<UserDto[]>('/system/user-api/list');
    expectStatus(all, 200);
    const adminId = all.body.data.find((u) => u.userName === b.username)!.userId;
    expect(ids(all)).toEqual([adminId, a.userId, c.userId, e.userId]);

    expect(ids(await b.admin.get(`/system/user-api/list?deptId=${d1}`))).toEqual([a.userId, e.userId]);
    expect(ids(await b.admin.get(`/system/user-api/list?deptId=${d2}`))).toEqual([c.userId]);
    expect(ids(await b.admin.get(`/system/user-api/list?userName=alpha`))).toEqual([a.userId, e.userId]);
    expect(ids(await b.admin.get(`/system/user-api/list?userName=${tag}`))).toEqual([a.userId, c.userId, e.userId]);
    expect(ids(await b.admin.get('/system/user-api/list?status=1'))).toEqual([c.userId, e.userId]);
    expect(ids(await b.admin.get('/system/user-api/list?status=0'))).toEqual([adminId, a.userId]);
    expect(ids(await b.admin.get(`/system/user-api/list?deptId=${d1}&status=1`))).toEqual([e.userId]);
    // LIKE wildcards in the filter are taken literally.
    expect(ids(await b.admin.get('/system/user-api/list?userName=%25'))).toEqual([]);
    // "lph_" occurs in no name literally, but as a LIKE pattern it would match "lpha".
    expect(ids(await b.admin.get('/system/user-api/list?userName=lph_'))).toEqual([]);

    // Deleted users are not listed.
    expectStatus(await b.admin.delete(`/system/user-api/${a.userId}`), 200);
    expect(ids(await b.admin.get(`/system/user-api/list?deptId=${d1}`))).toEqual([e.userId]);
  });

  it('400 for bad filters', async () => {
    expectStatus(await t.root.get('/system/user-api/list?status=2'), 400, /status/);
    expectStatus(await t.root.get('/system/user-api/list?deptId=abc'), 400, /deptId/);
  });
});

describe('password', () => {
  it('is never returned by any read, and is stored as a salted scrypt hash', async () => {
    const b = await createTenantWithAdmin(t);
    const secret = 'very-secret-pw-1';
    const { userId, userName } = await createUser(b.admin, { password: secret });
    const other = await createUser(b.admin, { password: secret });
    expectStatus(await b.admin.put('/system/user-api', { userId, userName, roles: ['user'], password: 'very-secret-pw-2' }), 200);
    const reads = [
      await b.admin.get(`/system/user-api/${userId}`),
      await b.admin.get('/system/user-api/list'),
      await b.admin.get(`/system/user-api/list?userName=${userName}`),
      await (await t.login(b.tenantId, userName, 'very-secret-pw-2')).get('/auth/me'),
    ];
    for (const res of reads) {
      expectStatus(res, 200);
      const text = JSON.stringify(res.body);
      expect(text).not.toMatch(/password|hash|scrypt|very-secret/i);
    }
    const stored = (await row(b.tenantId, other.userId))!.passwordHash;
    expect(stored).toMatch(/^scrypt\$/);
    expect(stored).not.toContain(secret);
    const fresh = await createUser(b.admin, { password: secret });
    expect((await row(b.tenantId, fresh.userId))!.passwordHash).not.toBe(stored);
  });

  it('shorter than 8 characters is a 400 on create and on update, changing nothing', async () => {
    const b = await createTenantWithAdmin(t);
    const userName = uniqueName();
    expectStatus(await b.admin.post('/system/user-api', { userName, password: 'short-7', roles: ['user'] }), 400, /password/);
    expect(await liveWithName(b.tenantId, userName)).toBe(0);

    const user = await createUser(b.admin);
    const before = (await row(b.tenantId, user.userId))!.passwordHash;
    expectStatus(await b.admin.put('/system/user-api', { ...user, roles: ['user'], password: '1234567' }), 400, /password/);
    expect((await row(b.tenantId, user.userId))!.passwordHash).toBe(before);
    expect((await t.anon.post('/auth/login', { tenantId: b.tenantId, username: user.userName, password: PASSWORD })).status).toBe(200);
    // Exactly 8 is enough.
    expectStatus(await b.admin.put('/system/user-api', { ...user, roles: ['user'], password: '12345678' }), 200);
    expect((await t.anon.post('/auth/login', { tenantId: b.tenantId, username: user.userName, password: '12345678' })).status).toBe(200);
  });
});

describe('userName', () => {
  it('is unique among the live users of a tenant (409), reusable after delete and in another tenant', async () => {
    const a = await createTenantWithAdmin(t);
    const b = await createTenantWithAdmin(t);
    const userName = uniqueName();
    const first = await createUser(a.admin, { userName });
    expectStatus(await a.admin.post('/system/user-api', { userName, password: PASSWORD, roles: ['admin'] }), 409, /userName/);
    expect(await liveWithName(a.tenantId, userName)).toBe(1);
    expect((await row(a.tenantId, first.userId))?.role).toBe('user');

    // Another tenant may have the same name.
    await createUser(b.admin, { userName });
    expect(await liveWithName(b.tenantId, userName)).toBe(1);

    // After a delete the name is free again.
    expectStatus(await a.admin.delete(`/system/user-api/${first.userId}`), 200);
    const second = await createUser(a.admin, { userName });
    expect(second.userId).not.toBe(first.userId);
    expect(await liveWithName(a.tenantId, userName)).toBe(1);
  });

  it('renaming onto a live name is a 409 that changes nothing', async () => {
    const b = await createTenantWithAdmin(t);
    const x = await createUser(b.admin);
    const y = await createUser(b.admin, { nickName: 'Keep' });
    expectStatus(await b.admin.put('/system/user-api', { userId: y.userId, userName: x.userName, roles: ['user'] }), 409, /userName/);
    const got = await b.admin.get<UserDto>(`/system/user-api/${y.userId}`);
    expect(got.body.data.userName).toBe(y.userName);
    expect(got.body.data.nickName).toBe('Keep');
    // Keeping one's own name is of course fine.
    expectStatus(await b.admin.put('/system/user-api', { userId: y.userId, userName: y.userName, roles: ['user'] }), 200);
  });

  it('concurrent creates of one name: exactly one wins', async () => {
    const b = await createTenantWithAdmin(t);
    const userName = uniqueName();
    const replies = await Promise.all(
      Array.from({ length: 6 }, () => b.admin.post('/system/user-api', { userName, password: PASSWORD, roles: ['user'] })),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    expect(await liveWithName(b.tenantId, userName)).toBe(1);
  });
});

describe('deptId', () => {
  it("must be a live department of the caller's tenant (400), on create and on update", async () => {
    const a = await createTenantWithAdmin(t);
    const b = await createTenantWithAdmin(t);
    const gone = await createDept(a.admin, a.rootDeptId);
    expectStatus(await a.admin.delete(`/system/dept-api/${gone}`), 200);
    const bad = [b.rootDeptId, gone, 99999999];

    for (const deptId of bad) {
      const userName = uniqueName();
      expectStatus(await a.admin.post('/system/user-api', { userName, password: PASSWORD, roles: ['user'], deptId }), 400, /deptId/);
      expect(await liveWithName(a.tenantId, userName)).toBe(0);
    }

    const user = await createUser(a.admin, { deptId: a.rootDeptId });
    for (const deptId of bad) {
      expectStatus(await a.admin.put('/system/user-api', { ...user, roles: ['user'], deptId }), 400, /deptId/);
      expect((await row(a.tenantId, user.userId))?.deptId).toBe(a.rootDeptId);
    }
    // A live department of one's own tenant is accepted.
    const live = await createDept(a.admin, a.rootDeptId);
    expectStatus(await a.admin.put('/system/user-api', { ...user, roles: ['user'], deptId: live }), 200);
    expect((await row(a.tenantId, user.userId))?.deptId).toBe(live);
  });

  it('a department with a live user cannot be deleted (409 naming it); without users it can', async () => {
    const b = await createTenantWithAdmin(t);
    const deptName = uniqueName('Staffed');
    const staffed = await createDept(b.admin, b.rootDeptId, deptName);
    const empty = await createDept(b.admin, b.rootDeptId);
    const user = await createUser(b.admin, { deptId: staffed });

    const refused = await b.admin.delete(`/system/dept-api/${staffed}`);
    expectStatus(refused, 409);
    expect(refused.body.msg).toContain(deptName);
    expectStatus(await b.admin.get(`/system/dept-api/${staffed}`), 200);

    // All or nothing: the empty department in the same batch survives too.
    expectStatus(await b.admin.delete(`/system/dept-api/${empty},${staffed}`), 409);
    expectStatus(await b.admin.get(`/system/dept-api/${empty}`), 200);

    // A disabled user still belongs to the department.
    expectStatus(await b.admin.put('/system/user-api', { ...user, roles: ['user'], deptId: staffed, status: '1' }), 200);
    expectStatus(await b.admin.delete(`/system/dept-api/${staffed}`), 409);

    // Once the user is deleted, the department can go.
    expectStatus(await b.admin.delete(`/system/user-api/${user.userId}`), 200);
    expectStatus(await b.admin.delete(`/system/dept-api/${empty},${staffed}`), 200);
    expectStatus(await b.admin.get(`/system/dept-api/${staffed}`), 404);
    expectStatus(await b.admin.get(`/system/dept-api/${empty}`), 404);
  });
});

describe('roles field', () => {
  it('must be ["admin"] or ["user"] (400 otherwise), on create and on update', async () => {
    const b = await createTenantWithAdmin(t);
    const bad: unknown[] = [['superadmin'], ['root'], [], ['admin', 'user'], ['Admin'], null];
    for (const roles of bad) {
      const userName = uniqueName();
      expectStatus(await b.admin.post('/system/user-api', { userName, password: PASSWORD, roles }), 400, /roles/);
      expect(await liveWithName(b.tenantId, userName)).toBe(0);
    }
    const missing = uniqueName();
    expectStatus(await b.admin.post('/system/user-api', { userName: missing, password: PASSWORD }), 400, /roles/);
    expect(await liveWithName(b.tenantId, missing)).toBe(0);

    const user = await createUser(b.admin);
    for (const roles of bad) {
      expectStatus(await b.admin.put('/system/user-api', { ...user, roles }), 400, /roles/);
      expect((await row(b.tenantId, user.userId))?.role).toBe('user');
    }
  });
});

describe('protected accounts', () => {
  it('the superadmin account cannot be updated or deleted through the API (403)', async () => {
    const rootId: number = (await t.root.get('/auth/me')).body.data.user.userId;
    const platformAdmin = await createUserAndLogin(t, t.root, '000000', 'admin');
    const bystander = await createUser(t.root);

    expectStatus(await platformAdmin.client.put('/system/user-api', { userId: rootId, userName: 'admin', roles: ['admin'] }), 403, /superadmin/);
    expectStatus(
      await platformAdmin.client.put('/system/user-api', { userId: rootId, userName: 'admin', roles: ['user'], password: 'taken-over-1' }),
      403,
    );
    expectStatus(await platformAdmin.client.delete(`/system/user-api/${rootId}`), 403, /superadmin/);
    // All or nothing: a batch that includes the superadmin deletes nobody.
    expectStatus(await platformAdmin.client.delete(`/system/user-api/${bystander.userId},${rootId}`), 403);
    expect((await row('000000', bystander.userId))?.delFlag).toBe('0');
    // Not even the superadmin itself.
    expectStatus(await t.root.put('/system/user-api', { userId: rootId, userName: 'admin', roles: ['admin'], nickName: 'x' }), 403);

    const root = await row('000000', rootId);
    expect(root).toMatchObject({ role: 'superadmin', delFlag: '0', status: '0', userName: 'admin' });
    expect((await t.root.get('/auth/me')).status).toBe(200);
    expect((await t.root.get(`/system/user-api/${rootId}`)).body.data.roles).toEqual(['superadmin']);
  });

  it('deleting yourself is a 409, alone or in a batch', async () => {
    const b = await createTenantWithAdmin(t);
    const self: number = (await b.admin.get('/auth/me')).body.data.user.userId;
    const other = await createUser(b.admin);
    expectStatus(await b.admin.delete(`/system/user-api/${self}`), 409, /own account/);
    expectStatus(await b.admin.delete(`/system/user-api/${other.userId},${self}`), 409);
    expect((await row(b.tenantId, self))?.delFlag).toBe('0');
    expect((await row(b.tenantId, other.userId))?.delFlag).toBe('0');
    expect((await b.admin.get('/auth/me')).status).toBe(200);

    // The superadmin too.
    const rootId: number = (await t.root.get('/auth/me')).body.data.user.userId;
    expectStatus(await t.root.delete(`/system/user-api/${rootId}`), 409);
    expect((await row('000000', rootId))?.delFlag).toBe('0');
  });
});

describe('batch delete', () => {
  it('is all or nothing: one unknown id is a 404 and nothing is deleted', async () => {
    const b = await createTenantWithAdmin(t);
    const u1 = await createUser(b.admin);
    const u2 = await createUser(b.admin);
    const refused = await b.admin.delete(`/system/user-api/${u1.userId},${u2.userId},99999999`);
    expectStatus(refused, 404, /99999999/);
    expect((await row(b.tenantId, u1.userId))?.delFlag).toBe('0');
    expect((await row(b.tenantId, u2.userId))?.delFlag).toBe('0');

    // An already deleted id counts as unknown.
    const u3 = await createUser(b.admin);
    expectStatus(await b.admin.delete(`/system/user-api/${u3.userId}`), 200);
    expectStatus(await b.admin.delete(`/system/user-api/${u1.userId},${u3.userId}`), 404);
    expect((await row(b.tenantId, u1.userId))?.delFlag).toBe('0');

    // Duplicates are ignored.
    expectStatus(await b.admin.delete(`/system/user-api/${u1.userId},${u2.userId},${u1.userId}`), 200);
    expect((await row(b.tenantId, u1.userId))?.delFlag).toBe('2');
    expect((await row(b.tenantId, u2.userId))?.delFlag).toBe('2');
    expect(await liveCount(b.tenantId)).toBe(1);
  });

  it('400 for a malformed id list', async () => {
    for (const bad of ['1,,2', '1,abc', ',1']) expectStatus(await t.root.delete(`/system/user-api/${bad}`), 400);
    expectStatus(await t.root.delete(`/system/user-api/${Array.from({ length: 1001 }, (_, i) => i + 1).join(',')}`), 400);
  });
});

describe('tenant isolation', () => {
  it("another tenant's admin gets 404 for this tenant's users and never lists them", async () => {
    const a = await createTenantWithAdmin(t);
    const b = await createTenantWithAdmin(t);
    const ua = await createUser(a.admin, { nickName: 'A-side', deptId: a.rootDeptId });
    const ub = await createUser(b.admin);

    expectStatus(await b.admin.get(`/system/user-api/${ua.userId}`), 404);
    expectStatus(await b.admin.put('/system/user-api', { userId: ua.userId, userName: ua.userName, roles: ['admin'] }), 404);
    expectStatus(await b.admin.delete(`/system/user-api/${ua.userId}`), 404);
    expectStatus(await b.admin.delete(`/system/user-api/${ub.userId},${ua.userId}`), 404);

    const got = await a.admin.get<UserDto>(`/system/user-api/${ua.userId}`);
    expect(got.body.data).toMatchObject({ nickName: 'A-side', roles: ['user'], deptId: a.rootDeptId, delFlag: '0' });
    expect((await row(b.tenantId, ub.userId))?.delFlag).toBe('0');

    const list = await b.admin.get<UserDto[]>('/system/user-api/list');
    expect(ids(list)).not.toContain(ua.userId);
    expect(list.body.data.every((u) => u.tenantId === b.tenantId)).toBe(true);
    expect(ids(await b.admin.get(`/system/user-api/list?userName=${ua.userName}`))).toEqual([]);
    expect(ids(await b.admin.get(`/system/user-api/list?deptId=${a.rootDeptId}`))).toEqual([]);

    // The platform superadmin's list is its own tenant's too.
    const rootList = await t.root.get<UserDto[]>('/system/user-api/list');
    expect(rootList.body.data.every((u) => u.tenantId === '000000')).toBe(true);
  });
});

describe('accountCount', () => {
  it('caps the live users of a tenant (409), and a delete frees a slot', async () => {
    const b = await createTenantWithAdmin(t, t.root, { accountCount: 3 });
    const u1 = await createUser(b.admin);
    await createUser(b.admin);
    const name = uniqueName();
    expectStatus(await b.admin.post('/system/user-api', { userName: name, password: PASSWORD, roles: ['user'] }), 409, /quota/);
    expect(await liveWithName(b.tenantId, name)).toBe(0);
    expect(await liveCount(b.tenantId)).toBe(3);

    // Updates at the cap are fine.
    expectStatus(await b.admin.put('/system/user-api', { ...u1, roles: ['user'], nickName: 'Still here' }), 200);

    expectStatus(await b.admin.delete(`/system/user-api/${u1.userId}`), 200);
    await createUser(b.admin, { userName: name });
    expect(await liveCount(b.tenantId)).toBe(3);
    expectStatus(await b.admin.post('/system/user-api', { userName: uniqueName(), password: PASSWORD, roles: ['user'] }), 409);
  });

  it('disabled users still count; -1 means unlimited', async () => {
    const b = await createTenantWithAdmin(t, t.root, { accountCount: 2 });
    await createUser(b.admin, { status: '1' });
    expectStatus(await b.admin.post('/system/user-api', { userName: uniqueName(), password: PASSWORD, roles: ['user'] }), 409);

    const open = await createTenantWithAdmin(t);
    for (let i = 0; i < 5; i++) await createUser(open.admin);
    expect(await liveCount(open.tenantId)).toBe(6);
  });

  it('holds under 12 concurrent creates: exactly the free slots succeed', async () => {
    const b = await createTenantWithAdmin(t, t.root, { accountCount: 5 });
    expect(await liveCount(b.tenantId)).toBe(1);
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        b.admin.post('/system/user-api', { userName: `race${i}_${Math.random().toString(36).slice(2, 8)}`, password: PASSWORD, roles: ['user'] }),
      ),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(4);
    expect(statuses.filter((s) => s === 409)).toHaveLength(8);
    for (const r of replies.filter((r) => r.status === 409)) expect(r.body.msg).toMatch(/quota/);
    expect(await liveCount(b.tenantId)).toBe(5);
  });

  it('holds when concurrent creates are released at the same instant', async () => {
    // Password hashing staggers the requests above, so an unserialised
    // count-then-insert could still pass there. Here every create names a
    // department and the test holds an exclusive lock on sys_dept (which
    // authentication never reads) until all 12 requests are blocked inside
    // their transactions, then releases them together.
    const b = await createTenantWithAdmin(t, t.root, { accountCount: 4 });
    let lockTaken!: () => void;
    const taken = new Promise<void>((resolve) => (lockTaken = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The lock holder and the probe below use the server itself: behind a
    // pooler they would otherwise queue for its few server connections, taken by
    // the very requests they wait for.
    const holder = t.direct.begin(async (tx) => {
      await tx`LOCK TABLE sys_dept IN ACCESS EXCLUSIVE MODE`;
      lockTaken();
      await released;
    });
    await taken;
    const pending = Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        b.admin.post('/system/user-api', {
          userName: `burst${i}_${Math.random().toString(36).slice(2, 8)}`,
          password: PASSWORD,
          roles: ['user'],
          deptId: b.rootDeptId,
        }),
      ),
    );
    if (t.kind === 'pglite') {
      // One connection: the requests simply queue behind the lock holder.
      await new Promise((resolve) => setTimeout(resolve, 500));
    } else {
      // All 12 blocked; behind a pooler (docs/testing.md#through-pgbouncer) as many as
      // it has server connections, the rest queued in it: then the count stops growing.
      const deadline = Date.now() + 15_000;
      let last = 0;
      let steadySince = Date.now();
      for (;;) {
        const [w] = await t.direct<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`;
        if (w!.n !== last) [last, steadySince] = [w!.n, Date.now()];
        if (last >= 12 || (inject('poolerUrl') && last > 0 && Date.now() - steadySince > 500) || Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    release();
    await holder;
    const statuses = (await pending).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 409)).toHaveLength(9);
    expect(await liveCount(b.tenantId)).toBe(4);
  });
});
