import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ADMIN_PASSWORD, buildTestApp, Client, createdId, createUserAndLogin, type TestApp } from './support/app.js';
import { createTenantWithAdmin, type TenantWithAdmin } from './support/tenant-fixtures.js';
import { purgeAudit } from '../src/audit/audit.retention.js';
import { expectNewestCopy } from './support/invariants.js';
import { diff, diffSql, recordedColumns, values, valuesSql, type RowImage } from '../src/audit/audit.record.js';

// docs/api-rules.md#audit-trail-and-change-feed: one record per change, in the change's transaction; the
// list with its filters and tenant-hierarchy visibility; the cursor feed;
// retention. The stream and the feed under concurrency have their own files.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

const TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/;

interface AuditRecord {
  id: string;
  time: string;
  tenantId: string;
  userName: string;
  userTenantId: string;
  action: string;
  entityType: string;
  entityId: string;
  requestId: string | null;
  ip: string | null;
  changes: Record<string, any>;
}

/** Records matching the filters, as the superadmin sees them (newest first). */
async function audit(query: Record<string, string> = {}, client: Client = t.root): Promise<AuditRecord[]> {
  const res = await client.get(`/system/audit-api/list?${new URLSearchParams({ pageSize: '1000', ...query })}`);
  expect(res.status).toBe(200);
  return res.body.data.rows;
}

/** A request with an X-Request-Id of our choosing, so its record can be found by it. */
async function send(client: Client, method: 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) {
  const requestId = `audit-test-${Math.random().toString(36).slice(2)}`;
  const res = await client.app.inject({
    method,
    url,
    ...(payload === undefined ? {} : { payload: payload as object }),
    headers: { authorization: `Bearer ${client.token}`, 'x-request-id': requestId },
  });
  const records = (await audit()).filter((r) => r.requestId === requestId).reverse();
  return { status: res.statusCode, body: res.json(), headers: res.headers, requestId, records };
}

/** Every audit row as stored, as text: for scanning for secrets. */
async function rawRows(): Promise<string> {
  const rows = await t.sql<{ row: string }[]>`SELECT to_jsonb(a)::text AS row FROM audit_log a`;
  return rows.map((r) => r.row).join('\n');
}

describe('records of department writes', () => {
  it('create, update, move and a batch delete: one record each (one per row of the batch), fields as the audit rules say', async () => {
    const { tenantId, admin, rootDeptId, username } = await createTenantWithAdmin(t);
    const created = await send(admin, 'POST', '/system/dept-api', { parentId: rootDeptId, deptName: 'Sales', leader: 'Li', orderNum: 3 });
    expect(created.status).toBe(200);
    const deptId = createdId({ status: 200, body: created.body, headers: created.headers });
    expect(created.records).toHaveLength(1);
    const [rec] = created.records;
    expect(rec).toMatchObject({
      tenantId,
      userName: username,
      userTenantId: tenantId,
      action: 'dept.create',
      entityType: 'dept',
      entityId: String(deptId),
      requestId: created.requestId,
      ip: '127.0.0.1',
    });
    expect(rec!.id).toMatch(/^[0-9]+$/);
    expect(rec!.time).toMatch(TIME);
    expect(rec!.changes).toMatchObject({ deptId, parentId: rootDeptId, deptName: 'Sales', leader: 'Li', orderNum: 3, status: '0' });

    const renamed = await send(admin, 'PUT', '/system/dept-api', { deptId, parentId: rootDeptId, deptName: 'Sales EU', leader: 'Li', orderNum: 3 });
    expect(renamed.status).toBe(200);
    expect(renamed.records).toHaveLength(1);
    expect(renamed.records[0]).toMatchObject({ action: 'dept.update', entityId: String(deptId) });
    // Just the changed field; update_time and update_by are the record's own time and userName.
    expect(renamed.records[0]!.changes).toEqual({ deptName: { before: 'Sales', after: 'Sales EU' } });

    const other = createdId(await admin.post('/system/dept-api', { parentId: rootDeptId, deptName: 'Other' }));
    const moved = await send(admin, 'PUT', '/system/dept-api', { deptId, parentId: other, deptName: 'Sales EU', orderNum: 3 });
    expect(moved.records).toHaveLength(1);
    expect(moved.records[0]).toMatchObject({ action: 'dept.move' });
    expect(moved.records[0]!.changes).toEqual({
      parentId: { before: rootDeptId, after: other },
      ancestors: { before: `0,${rootDeptId}`, after: `0,${rootDeptId},${other}` },
      leader: { before: 'Li', after: null },
    });

    const third = createdId(await admin.post('/system/dept-api', { parentId: rootDeptId, deptName: 'Third' }));
    const removed = await send(admin, 'DELETE', `/system/dept-api/${deptId},${third}`);
    expect(removed.status).toBe(200);
    expect(removed.records.map((r) => [r.action, r.entityId]).sort()).toEqual(
      [
        ['dept.delete', String(deptId)],
        ['dept.delete', String(third)],
      ].sort(),
    );
    // A delete carries the old values.
    expect(removed.records.find((r) => r.entityId === String(deptId))!.changes).toMatchObject({ deptName: 'Sales EU', parentId: other });
  });

  it("records made in the write's statement say what values() and diff() say of the stored rows", async () => {
    // The department writes compute `changes` in SQL from sys_dept's column list; every other write
    // in JS from the row. Both must agree on real rows: API names, no bookkeeping columns, only the
    // fields that differ (a column added to sys_dept but missing from the list fails here).
    const { admin, rootDeptId } = await createTenantWithAdmin(t);
    const other = createdId(await admin.post('/system/dept-api', { parentId: rootDeptId, deptName: 'Compared target' }));
    const image = async (id: number) =>
      (await t.sql<{ image: RowImage }[]>`SELECT to_jsonb(d) AS image FROM sys_dept d WHERE dept_id = ${id}`)[0]!.image;

    const created = await send(admin, 'POST', '/system/dept-api', { parentId: rootDeptId, deptName: 'Compared', phone: '123', orderNum: 4 });
    const id = createdId(created);
    const first = await image(id);
    expect(created.records.map((r) => r.changes)).toEqual([values(first)]);
    expect(Object.keys(values(first))).toContain('externalId');

    const moved = await send(admin, 'PUT', '/system/dept-api', {
      deptId: id,
      parentId: other,
      deptName: 'Compared 2',
      leader: 'Lee',
      phone: null,
      orderNum: 4,
    });
    expect(moved.status).toBe(200);
    const second = await image(id);
    expect(moved.records.map((r) => r.changes)).toEqual([diff(first, second)]);
    expect(Object.keys(diff(first, second)).sort()).toEqual(['ancestors', 'deptName', 'leader', 'parentId', 'phone']);

    const same = await send(admin, 'PUT', '/system/dept-api', { deptId: id, parentId: other, deptName: 'Compared 2', leader: 'Lee', orderNum: 4 });
    expect(same.records.map((r) => r.changes)).toEqual([diff(second, await image(id))]);

    const removed = await send(admin, 'DELETE', `/system/dept-api/${id}`);
    expect(removed.status).toBe(200);
    expect(removed.records.map((r) => r.changes)).toEqual([values(await image(id))]);
  });

  it('the SQL forms apply the naming and secret rules of values() and diff()', async () => {
    const columns = ['api_token', 'client_secret', 'some_hash', 'update_by', 'del_flag', 'a_b_c', 'n', 'plain'];
    const recorded = recordedColumns(columns);
    const [row] = await t.sql<{ values: unknown; diff: unknown; before: RowImage; after: RowImage }[]>`
      WITH b AS (SELECT 't'::text AS api_token, 's'::text AS client_secret, 'h'::text AS some_hash, 'x'::text AS update_by,
                        '0'::text AS del_flag, '[1, {"x": null}]'::jsonb AS a_b_c, NULL::int AS n, 1 AS plain),
           a AS (SELECT 'u'::text AS api_token, 's2'::text AS client_secret, 'h2'::text AS some_hash, 'y'::text AS update_by,
                        '2'::text AS del_flag, '[1, {"x": 2}]'::jsonb AS a_b_c, 5 AS n, 1 AS plain)
      SELECT ${valuesSql(t.sql, recorded, 'a')} AS values, ${diffSql(t.sql, recorded, 'b', 'a')} AS diff,
             to_jsonb(b) AS before, to_jsonb(a) AS after
      FROM a, b`;
    expect(row!.values).toEqual(values(row!.after));
    expect(row!.values).toEqual({ aBC: [1, { x: 2 }], n: 5, plain: 1 });
    expect(row!.diff).toEqual(diff(row!.before, row!.after));
    expect(Object.keys(row!.diff as object).sort()).toEqual(['aBC', 'n']);
  });

  it('a refused write records nothing (404, 409, 400)', async () => {
    const { admin, rootDeptId } = await createTenantWithAdmin(t);
    const before = (await audit()).length;
    expect((await send(admin, 'PUT', '/system/dept-api', { deptId: 999999, parentId: 0, deptName: 'X' })).status).toBe(404);
    expect((await send(admin, 'DELETE', `/system/dept-api/${rootDeptId}`)).status).toBe(409);
    expect((await send(admin, 'POST', '/system/dept-api', { parentId: 987654, deptName: 'X' })).status).toBe(400);
    expect((await audit()).length).toBe(before);
    const [stored] = await t.sql<{ n: number }[]>`SELECT count(*) AS n FROM audit_log`;
    expect(stored!.n).toBe(before);
  });

  // The refusal is a trigger of the test's own, and Citus allows none on a distributed table.
  it.skipIf(inject('citusNodes') !== '')('when the record cannot be written, the change does not happen (500, rolled back, no record)', async () => {
    const { admin, tenantId, rootDeptId } = await createTenantWithAdmin(t);
    // Only in this test's own database: the audit insert of one department name fails.
    await t.sql.unsafe(`
      CREATE FUNCTION audit_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.changes->>'deptName' = 'Unrecordable' THEN RAISE EXCEPTION 'audit store refused'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER audit_test_refuse BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_test_refuse();`);
    try {
      const res = await admin.post('/system/dept-api', { parentId: rootDeptId, deptName: 'Unrecordable' });
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({ code: 500, data: null });
      const depts = await t.sql`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_name = 'Unrecordable'`;
      expect(depts).toHaveLength(0);
      const records = await t.sql`SELECT 1 FROM audit_log WHERE changes->>'deptName' = 'Unrecordable'`;
      expect(records).toHaveLength(0);
    } finally {
      await t.sql.unsafe('DROP TRIGGER audit_test_refuse ON audit_log; DROP FUNCTION audit_test_refuse();');
    }
  });
});

describe('records of user writes', () => {
  it('create, update, password change, delete; never a password or hash, in the API or in the table', async () => {
    const { tenantId, admin, password: adminPassword } = await createTenantWithAdmin(t);
    const password = 'Secret-Password-1';
    const created = await send(admin, 'POST', '/system/user-api', { userName: 'alice', password, roles: ['user'], nickName: 'Alice' });
    const userId = createdId({ status: created.status, body: created.body, headers: created.headers });
    expect(created.records).toHaveLength(1);
    expect(created.records[0]).toMatchObject({ tenantId, action: 'user.create', entityType: 'user', entityId: String(userId) });
    expect(created.records[0]!.changes).toMatchObject({ userId, userName: 'alice', nickName: 'Alice', role: 'user' });

    const edited = await send(admin, 'PUT', '/system/user-api', { userId, userName: 'alice', nickName: 'Alice B', roles: ['user'] });
    expect(edited.records.map((r) => r.action)).toEqual(['user.update']);
    expect(edited.records[0]!.changes).toEqual({ nickName: { before: 'Alice', after: 'Alice B' } });

    const newPassword = 'Other-Password-2';
    const onlyPassword = await send(admin, 'PUT', '/system/user-api', {
      userId,
      userName: 'alice',
      nickName: 'Alice B',
      roles: ['user'],
      password: newPassword,
    });
    expect(onlyPassword.records.map((r) => [r.action, r.changes])).toEqual([['user.password', {}]]);

    const both = await send(admin, 'PUT', '/system/user-api', {
      userId,
      userName: 'alice',
      nickName: 'Alice C',
      roles: ['user'],
      password: 'Third-Password-3',
    });
    expect(both.records.map((r) => r.action).sort()).toEqual(['user.password', 'user.update']);
    expect(both.records.find((r) => r.action === 'user.update')!.changes).toEqual({ nickName: { before: 'Alice B', after: 'Alice C' } });

    const removed = await send(admin, 'DELETE', `/system/user-api/${userId}`);
    expect(removed.records).toHaveLength(1);
    expect(removed.records[0]).toMatchObject({ action: 'user.delete', entityId: String(userId) });
    expect(removed.records[0]!.changes).toMatchObject({ userName: 'alice', nickName: 'Alice C' });

    const [stored] = await t.sql<
      { hash: string }[]
    >`SELECT password_hash AS hash FROM sys_user WHERE tenant_id = ${tenantId} AND user_id = ${userId}`;
    const hash = stored!.hash;
    const api = JSON.stringify(await audit({ tenantId }));
    const table = await rawRows();
    for (const secret of [password, newPassword, 'Third-Password-3', hash, adminPassword]) {
      expect(api).not.toContain(secret);
      expect(table).not.toContain(secret);
    }
    // No hash of any user, and no field that could carry one.
    expect(table).not.toMatch(/scrypt\$|"password_?hash"|"passwordHash"/i);
  });
});

describe('records of tenant writes', () => {
  it('create with provisioning, update and delete; the 19-digit id exact; the provisioned admin by the caller', async () => {
    const body = {
      tenantName: 'Acme',
      companyName: `Acme ${Math.random()}`,
      contactUserName: 'C',
      contactPhone: '1',
      username: 'boss',
      password: 'boss-password',
    };
    const created = await send(t.root, 'POST', '/system/tenant-api', body);
    expect(created.status).toBe(200);
    const id = String(created.headers.location).split('/').pop()!;
    const tenantCode = (await t.root.get(`/system/tenant-api/${id}`)).body.data.tenantId as string;
    expect(created.records.map((r) => r.action)).toEqual(['tenant.create', 'dept.create', 'user.create']);
    for (const r of created.records) expect(r).toMatchObject({ tenantId: tenantCode, userName: 'admin', userTenantId: '000000' });
    expect(created.records[0]).toMatchObject({ entityType: 'tenant', entityId: id });
    expect(created.records[0]!.changes).toMatchObject({ id, tenantId: tenantCode, tenantParent: '000000', companyName: body.companyName });

    const updated = await send(t.root, 'PUT', '/system/tenant-api', {
      ...body,
      id,
      username: undefined,
      password: undefined,
      tenantName: 'Acme 2',
      status: '1',
    });
    expect(updated.status).toBe(200);
    expect(updated.records).toHaveLength(1);
    expect(updated.records[0]!.changes).toEqual({ tenantName: { before: 'Acme', after: 'Acme 2' }, status: { before: '0', after: '1' } });

    const removed = await send(t.root, 'DELETE', `/system/tenant-api/${id}`);
    expect(removed.records).toHaveLength(1);
    expect(removed.records[0]).toMatchObject({ action: 'tenant.delete', entityId: id, tenantId: tenantCode });
    expect(removed.records[0]!.changes).toMatchObject({ id, tenantName: 'Acme 2', status: '1' });
    expect(await rawRows()).not.toContain('boss-password');
  });
});

describe('records of logins and logouts', () => {
  it('success, every kind of refusal (401, 429, 403) and logout; the attempted names for failures', async () => {
    const tenant = await createTenantWithAdmin(t);
    const user = await createUserAndLogin(t, tenant.admin, tenant.tenantId, 'user');
    const login = async (tenantId: string, username: string, password: string) => {
      const requestId = `login-${Math.random().toString(36).slice(2)}`;
      const res = await t.app.inject({
        method: 'POST',
        url: '/auth/login',
        payload: { tenantId, username, password },
        headers: { 'x-request-id': requestId },
      });
      const records = (await audit()).filter((r) => r.requestId === requestId);
      return { status: res.statusCode, body: res.json(), records };
    };

    const ok = await login(tenant.tenantId, user.userName, user.password);
    expect(ok.status).toBe(200);
    expect(ok.records).toHaveLength(1);
    expect(ok.records[0]).toMatchObject({
      action: 'auth.login',
      entityType: 'session',
      tenantId: tenant.tenantId,
      userName: user.userName,
      userTenantId: tenant.tenantId,
    });
    expect(JSON.stringify(ok.records)).not.toContain(ok.body.data.access_token);

    const bad = await login(tenant.tenantId, 'nobody-here', 'wrong-password-x');
    expect(bad.status).toBe(401);
    expect(bad.records).toHaveLength(1);
    expect(bad.records[0]).toMatchObject({ action: 'auth.login_failed', userName: 'nobody-here', tenantId: tenant.tenantId });
    expect(bad.records[0]!.changes).toMatchObject({ status: 401 });

    for (let i = 0; i < 5; i++) await login(tenant.tenantId, 'locked-out', 'wrong-password-x');
    const locked = await login(tenant.tenantId, 'locked-out', 'wrong-password-x');
    expect(locked.status).toBe(429);
    expect(locked.records[0]).toMatchObject({ action: 'auth.login_failed', userName: 'locked-out' });
    expect(locked.records[0]!.changes).toMatchObject({ status: 429 });

    expect((await tenant.admin.put('/system/user-api', { userId: user.userId, userName: user.userName, roles: ['user'], status: '1' })).status).toBe(
      200,
    );
    const disabled = await login(tenant.tenantId, user.userName, user.password);
    expect(disabled.status).toBe(403);
    expect(disabled.records[0]!.changes).toMatchObject({ status: 403, reason: expect.stringContaining('disabled') });

    const session = await t.login(tenant.tenantId, tenant.username, tenant.password);
    const out = await send(session, 'POST', '/auth/logout');
    expect(out.status).toBe(200);
    expect(out.records).toHaveLength(1);
    expect(out.records[0]).toMatchObject({ action: 'auth.logout', entityType: 'session', userName: tenant.username, tenantId: tenant.tenantId });

    const table = await rawRows();
    for (const secret of [user.password, 'wrong-password-x', tenant.password, session.token!]) expect(table).not.toContain(secret);
  });
});

describe('GET /system/audit-api/list', () => {
  let a: TenantWithAdmin;
  let b: TenantWithAdmin;
  let c: TenantWithAdmin;

  /**
   * A tenant under `parent` (made by the parent's admin) with its own admin
   * signed in and one department written. Its admin is named admin, as the
   * superadmin is: the userName filters below look for that name.
   */
  async function childTenant(parent: Client, marker: string) {
    const child = await createTenantWithAdmin(t, parent, { tenantName: marker, username: 'admin' });
    expect((await child.admin.post('/system/dept-api', { parentId: 0, deptName: marker })).status).toBe(200);
    return child;
  }

  beforeAll(async () => {
    // Three levels: 000000 > A > B > C.
    a = await childTenant(t.root, 'LevelA');
    b = await childTenant(a.admin, 'LevelB');
    c = await childTenant(b.admin, 'LevelC');
  });

  const tenantsSeen = async (client: Client) => new Set((await audit({}, client)).map((r) => r.tenantId));

  it('shows an admin its own tenant and the tenants below it; superadmin all; a user 403', async () => {
    expect([...(await tenantsSeen(a.admin))].sort()).toEqual([a.tenantId, b.tenantId, c.tenantId].sort());
    expect([...(await tenantsSeen(b.admin))].sort()).toEqual([b.tenantId, c.tenantId].sort());
    expect([...(await tenantsSeen(c.admin))]).toEqual([c.tenantId]);
    const all = await tenantsSeen(t.root);
    for (const code of ['000000', a.tenantId, b.tenantId, c.tenantId]) expect(all.has(code)).toBe(true);
    // Filtering by a tenant outside one's scope shows nothing, not an error.
    expect(await audit({ tenantId: a.tenantId }, b.admin)).toEqual([]);

    const user = await createUserAndLogin(t, b.admin, b.tenantId, 'user');
    const refused = await user.client.get('/system/audit-api/list');
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 403, data: null });
    expect((await user.client.get('/system/audit-api/changes')).status).toBe(403);
    expect((await t.anon.get('/system/audit-api/list')).status).toBe(401);
  });

  it('is newest first, paged with a total, and applies each filter', async () => {
    const page1 = await t.root.get('/system/audit-api/list?pageSize=2&pageNum=1');
    const page2 = await t.root.get('/system/audit-api/list?pageSize=2&pageNum=2');
    expect(page1.body.data.total).toBeGreaterThan(4);
    expect(page1.body.data.rows).toHaveLength(2);
    const ids = [...page1.body.data.rows, ...page2.body.data.rows].map((r: AuditRecord) => BigInt(r.id));
    expect(ids).toEqual([...ids].sort((x, y) => (x > y ? -1 : x < y ? 1 : 0)));

    const check = async (query: Record<string, string>, predicate: (r: AuditRecord) => boolean) => {
      const rows = await audit(query);
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every(predicate)).toBe(true);
      const res = await t.root.get(`/system/audit-api/list?${new URLSearchParams({ ...query, pageSize: '1' })}`);
      expect(res.body.data.total).toBe(rows.length);
      return rows;
    };
    await check({ action: 'dept.create' }, (r) => r.action === 'dept.create');
    await check({ entityType: 'tenant' }, (r) => r.entityType === 'tenant');
    await check({ tenantId: c.tenantId }, (r) => r.tenantId === c.tenantId);
    const deptRecord = (await audit({ tenantId: c.tenantId, action: 'dept.create' }))[0]!;
    const byEntity = await check({ entityType: 'dept', entityId: deptRecord.entityId }, (r) => r.entityId === deptRecord.entityId);
    expect(byEntity.map((r) => r.id)).toContain(deptRecord.id);
    await check({ userName: 'adm' }, (r) => r.userName.includes('adm'));
    expect(await audit({ userName: 'no-such-actor' })).toEqual([]);
    // A substring, case and all: LIKE's wildcards are literal, for the superadmin's walk and an admin's per-tenant one.
    for (const client of [t.root, b.admin]) {
      expect((await audit({ userName: 'dmi' }, client)).length).toBeGreaterThan(0);
      for (const literal of ['%', 'a%n', 'adm_n', 'ADMIN', '\\']) expect(await audit({ userName: literal }, client), literal).toEqual([]);
    }

    // Time bounds, in the server's time zone, inclusive.
    const newest = (await audit())[0]!;
    const second = newest.time.slice(0, 19);
    expect((await audit({ beginTime: second })).map((r) => r.id)).toContain(newest.id);
    expect((await audit({ endTime: second })).map((r) => r.id)).toContain(newest.id);
    expect((await audit({ endTime: newest.time.slice(0, 10) })).map((r) => r.id)).toContain(newest.id);
    const later = new Date(Date.now() + 2 * 86_400_000);
    const tomorrowPlus = `${later.getFullYear()}-${String(later.getMonth() + 1).padStart(2, '0')}-${String(later.getDate()).padStart(2, '0')}`;
    expect(await audit({ beginTime: tomorrowPlus })).toEqual([]);
    expect(await audit({ endTime: '2000-01-01' })).toEqual([]);

    for (const bad of ['action=dept.explode', 'entityType=thing', 'beginTime=yesterday', 'endTime=2026-02-30', 'pageSize=0', 'tenantId=12']) {
      const res = await t.root.get(`/system/audit-api/list?${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.msg).toMatch(new RegExp(bad.split('=')[0]!));
    }
  });
});

describe('GET /system/audit-api/changes', () => {
  it('pages through every visible record in cursor order, and returns the cursor to continue from', async () => {
    const { admin, tenantId } = await createTenantWithAdmin(t);
    for (let i = 0; i < 7; i++) expect((await admin.post('/system/dept-api', { parentId: 0, deptName: `Feed ${i}` })).status).toBe(200);

    const seen: AuditRecord[] = [];
    let cursor: string | undefined;
    for (;;) {
      const res = await admin.get(`/system/audit-api/changes?limit=3${cursor ? `&after=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      const { events, cursor: next } = res.body.data as { events: AuditRecord[]; cursor: string };
      if (events.length === 0) {
        expect(next).toBe(cursor);
        break;
      }
      expect(next).toBe(events.at(-1)!.id);
      seen.push(...events);
      cursor = next;
    }
    const ids = seen.map((e) => BigInt(e.id));
    expect(ids).toEqual([...ids].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
    expect(new Set(ids).size).toBe(ids.length);
    // Exactly the tenant's own records (it has no tenants below it).
    expect(seen.every((e) => e.tenantId === tenantId)).toBe(true);
    const expected = await t.sql<{ id: string }[]>`SELECT position::text AS id FROM audit_log WHERE tenant_id = ${tenantId} ORDER BY position`;
    expect(seen.map((e) => e.id)).toEqual(expected.map((r) => r.id));
    expect(seen.filter((e) => e.action === 'dept.create')).toHaveLength(8);

    const empty = await t.root.get(`/system/audit-api/changes?after=999999999999`);
    expect(empty.body.data).toEqual({ events: [], cursor: '999999999999' });
    for (const bad of ['limit=0', 'limit=1001', 'after=abc', 'after=-1']) {
      expect((await t.root.get(`/system/audit-api/changes?${bad}`)).status, bad).toBe(400);
    }
    const first = await t.root.get('/system/audit-api/changes?limit=1');
    const [oldest] = await t.sql<{ id: string }[]>`SELECT min(position)::text AS id FROM audit_log`;
    expect(first.body.data.events[0].id).toBe(oldest!.id);
  });
});

describe('retention', () => {
  /** The rows of audit_time_block (the time window's position blocks, 256 positions each) holding these positions. */
  const blocksOf = async (positions: number[]) =>
    (
      await t.sql<{ block: string }[]>`
        SELECT block::text FROM audit_time_block WHERE block = ANY(${positions.map((p) => Math.floor(p / 256))}::bigint[]) ORDER BY block`
    ).map((r) => r.block);

  it('copies the newest records with every column of audit_log but seq, so a column added to one is added to the other', async () => {
    const columnsOf = async (table: string) =>
      t.sql<{ name: string; type: string }[]>`
        SELECT column_name AS name, data_type AS type FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = ${table} AND column_name <> 'seq' ORDER BY column_name`;
    expect(await columnsOf('audit_newest')).toEqual(await columnsOf('audit_log'));
    expect((await columnsOf('audit_newest')).length).toBe(11);
  });

  it('purges records older than the retention period in batches, and keeps the rest', async () => {
    await t.root.get('/system/audit-api/list');
    const count = async () => (await t.sql<{ n: number }[]>`SELECT count(*) AS n FROM audit_log`)[0]!.n;
    const before = await count();
    // Old records as the sequencer would have left them, positions above every real one.
    await t.sql`
      INSERT INTO audit_log (position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, changes)
      SELECT 1000000 + g, now() - make_interval(days => 400 + g), '000000', 'old', '000000', 'dept.update', 'dept', g::text, '{}'
      FROM generate_series(1, 25) g`;
    await t.sql`
      INSERT INTO audit_log (position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, changes)
      VALUES (2000000, now() - make_interval(days => 300), '000000', 'recent', '000000', 'dept.update', 'dept', '1', '{}')`;
    // Records loaded with positions: the time window's blocks widened once after the load (docs/operations.md).
    await t.sql`SELECT audit_time_blocks_rebuild()`;
    expect(await blocksOf([1000001, 2000000])).toEqual(['3906', '7812']);
    // The rebuild made the copy of the newest records again (they are among them); each purge batch takes
    // from it what it deletes and fills it again from what is left (src/audit/audit.newest.ts).
    const copied = async () =>
      (await t.sql<{ p: string }[]>`SELECT position::text AS p FROM audit_newest WHERE position >= 1000000 ORDER BY position`).map((r) => r.p);
    expect(await copied()).toEqual([...Array.from({ length: 25 }, (_, i) => String(1000001 + i)), '2000000']);
    await expectNewestCopy(t.sql);
    expect(await purgeAudit(t.appSql, 365, 4)).toBe(25);
    expect(await copied()).toEqual(['2000000']);
    await expectNewestCopy(t.sql);
    const left = await t.sql<{ userName: string }[]>`SELECT user_name AS "userName" FROM audit_log WHERE user_name IN ('old', 'recent')`;
    expect(left.map((r) => r.userName)).toEqual(['recent']);
    // The time window's position block of the purged records goes with them; the recent record's stays.
    expect(await blocksOf([1000001, 2000000])).toEqual(['7812']);
    expect(await purgeAudit(t.appSql, 200, 1000)).toBe(1);
    expect(await count()).toBe(before);
    expect(await blocksOf([1000001, 2000000])).toEqual([]);
    expect(await copied()).toEqual([]);
    await expectNewestCopy(t.sql);
  });

  // A second connection holds the record's lock; the embedded database has one connection.
  // Not on Citus, whose purge over several shards takes no row lock to skip (src/audit/audit.retention.ts, purgeAudit).
  it.skipIf(!inject('databaseUrl') || inject('citusNodes') !== '')(
    'keeps the position block of an old record another purge holds, until that record is gone',
    async () => {
      await t.sql`
      INSERT INTO audit_log (position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, changes)
      VALUES (3000000, now() - make_interval(days => 400), '000000', 'held', '000000', 'dept.update', 'dept', '1', '{}')`;
      await t.sql`SELECT audit_time_blocks_rebuild()`;
      await t.sql.begin(async (tx) => {
        await tx`SELECT 1 FROM audit_log WHERE position = 3000000 FOR UPDATE`;
        expect(await purgeAudit(t.appSql, 365)).toBe(0);
        expect(await blocksOf([3000000])).toEqual(['11718']);
      });
      expect(await purgeAudit(t.appSql, 365)).toBe(1);
      expect(await blocksOf([3000000])).toEqual([]);
    },
  );
});

describe('OpenAPI', () => {
  it('documents the three endpoints, the stream as text/event-stream', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const list = doc.paths['/system/audit-api/list'].get;
    const changes = doc.paths['/system/audit-api/changes'].get;
    const stream = doc.paths['/system/audit-api/stream'].get;
    expect([list.operationId, changes.operationId, stream.operationId]).toEqual(['listAuditRecords', 'listAuditChanges', 'streamAuditChanges']);
    for (const op of [list, changes, stream]) {
      expect(op.tags).toEqual(['audit']);
      expect(op.summary).toBeTruthy();
      expect(op.responses['403']).toBeDefined();
    }
    expect(Object.keys(stream.responses['200'].content)).toEqual(['text/event-stream']);
    // The JSON endpoints answer in the envelope; the stream does not.
    expect(JSON.stringify(list.responses['200'])).toContain('SuccessEnvelope');
    expect(JSON.stringify(stream.responses['200'])).not.toContain('SuccessEnvelope');
  });
});

it('the root password never reaches the audit table', async () => {
  expect(await rawRows()).not.toContain(ADMIN_PASSWORD);
});
