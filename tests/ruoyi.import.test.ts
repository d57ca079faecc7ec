import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, loginAt, run, serviceDatabase, startService, type Service, type ServiceDatabase } from './support/service.js';
import { load, mysqlUnreachable, ruoyiSource, type RuoyiSource } from './support/ruoyi-source.js';
import { ADMIN_PASSWORD, deptIdOf, PEOPLE_PASSWORD, PLATFORM_PACKAGE, ruoyiRows, tenantIdOf, userIdOf } from './support/ruoyi-data.js';
import { inspectTarget } from './support/ruoyi-target.js';

// docs/migrate-from-ruoyi.md through the real command and the real service: a
// RuoYi-Vue-Plus 5.x database on MariaDB, `dept-tenant import-ruoyi` into
// the service's database (PostgreSQL, or the embedded one's DATA_DIR), then
// what every imported person sees and may do over HTTP, their RuoYi
// passwords included; a second run over the same source, and a run after
// the source changed. MariaDB is a server this machine runs (and CI starts);
// without one the file is skipped, saying so.

const unreachable = await mysqlUnreachable();
if (unreachable) console.warn(`tests/ruoyi.import.test.ts skipped: ${unreachable}`);

const TENANTS = 5;
const DEPTS = 40;
const USERS = 100;
let source: RuoyiSource;
let db: ServiceDatabase;
let service: Service | undefined;

async function importRun(args: string[] = []) {
  const r = run('import-ruoyi', db.env, ['--from', source.url, ...args]);
  const exit = await r.exited;
  return { code: exit.code, output: r.output() };
}
async function start() {
  service = await startService(db.env);
  return service.base;
}
async function stop() {
  await service?.stop();
  service = undefined;
}

describe.skipIf(unreachable !== undefined)(`import-ruoyi from MariaDB${unreachable ? ` (skipped: ${unreachable})` : ''}`, () => {
  beforeAll(async () => {
    source = await ruoyiSource('mysql');
    const rows = ruoyiRows({ tenants: TENANTS, depts: DEPTS, users: USERS });
    const tenant = (t: number) => rows.sys_tenant.find((r) => r.tenant_id === String(100000 + t))!;
    tenant(3).status = '1';
    tenant(4).del_flag = '1';
    tenant(5).create_time = new Date('2019-01-01T00:00:00');
    tenant(5).expire_time = new Date('2020-01-01T00:00:00');
    // A stored path that disagrees with the parents: recomputed, reported as fixed.
    rows.sys_dept.find((d) => d.dept_id === deptIdOf(1, 15))!.ancestors = '0,999';
    await load(source, rows);
    // RuoYi's posts: no place in the service, counted as dropped.
    await source.insert('sys_post', [
      { post_id: 1, dept_id: 103, post_code: 'ceo', post_name: '董事长', post_sort: 1, status: '0' },
      { post_id: 2, dept_id: 100, post_code: 'se', post_name: '项目经理', post_sort: 2, status: '0' },
    ]);
    db = await serviceDatabase();
  }, 120_000);
  afterAll(async () => {
    if (service) await stop();
    await source?.dispose();
    await db?.dispose();
  });

  it('refuses a missing or foreign --from as a usage error (exit 2)', async () => {
    const none = run('import-ruoyi', db.env, []);
    expect((await none.exited).code).toBe(2);
    expect(none.output()).toContain('--from is required');
    const foreign = run('import-ruoyi', db.env, ['--from', 'http://127.0.0.1/ruoyi']);
    expect((await foreign.exited).code).toBe(2);
    const unknown = run('import-ruoyi', db.env, ['--from', source.url, '--dryrun']);
    expect((await unknown.exited).code).toBe(2);
  });

  it('--dry-run prints the plan and writes nothing; the run then imports everything in one go', async () => {
    const dry = await importRun(['--dry-run']);
    expect(dry.code, dry.output).toBe(0);
    expect(dry.output).toMatch(/departments\s+\d+/);
    expect(dry.output).toContain('Dry run: nothing written');
    const done = await importRun();
    expect(done.code, done.output).toBe(0);
    // 5 generated tenants are new, 000000 merged onto the platform; the deleted package skipped.
    expect(done.output).toMatch(/tenants\s+5\s+1\s+0\s+0/);
    expect(done.output).toMatch(/packages\s+1\s+0\s+0\s+1/);
    expect(done.output).toMatch(new RegExp(`departments\\s+${TENANTS * DEPTS + 4}\\s+1\\s+0`));
    expect(done.output).toMatch(new RegExp(`users\\s+${TENANTS * USERS + 2}\\s+1\\s+0`));
    expect(done.output).toContain(`Ancestors recomputed (the source's disagreed with the parents) for sys_dept ${deptIdOf(1, 15)}`);
    expect(done.output).toMatch(/sys_user\.sex: \d+/);
    expect(done.output).toMatch(/sys_dept\.dept_category: \d+/);
    expect(done.output).toContain('sys_post (rows): 2');
  }, 120_000);

  it("RuoYi's admin is the platform's superadmin, with its password and profile; everyone signs in with theirs", async () => {
    const base = await start();
    const admin = await loginAt(base, '000000', 'admin', ADMIN_PASSWORD);
    const me = await call(base, 'GET', '/auth/me', undefined, admin);
    expect(me.body.data).toMatchObject({ user: { userName: 'admin', nickName: '疯狂的狮子Li' }, roles: ['superadmin'] });
    const profile = await call(base, 'GET', `/system/user-api/${me.body.data.user.userId}`, undefined, admin);
    expect(profile.body.data).toMatchObject({ email: 'crazyLionLi@163.com', phonenumber: '15888888888', deptId: 103 });
    const tenant = await call(base, 'GET', `/system/tenant-api/${tenantIdOf(1)}`, undefined, admin);
    expect(tenant.status).toBe(200);
    expect(tenant.body.data).toMatchObject({
      id: tenantIdOf(1),
      tenantId: '100001',
      tenantParent: '000000',
      companyName: 'Company 1',
      startTime: '2024-02-01',
      endTime: '2099-12-31',
      packageBo: { packageId: PLATFORM_PACKAGE, menuIds: '1,2,3,100' },
    });
    // A tenant's admin sees its whole chart, leaders by name, paths recomputed.
    const boss = await loginAt(base, '100001', 'admin', PEOPLE_PASSWORD);
    const list = await call(base, 'GET', '/system/dept-api/list', undefined, boss);
    expect(list.body.data).toHaveLength(DEPTS);
    const fixed = list.body.data.find((d: { deptId: number }) => d.deptId === Number(deptIdOf(1, 15)));
    expect(fixed).toMatchObject({ ancestors: `0,${deptIdOf(1, 0)},${deptIdOf(1, 1)}`, leader: 'Person 1-15', email: null });
    // Its people, but u97, deleted in RuoYi.
    const people = await call(base, 'GET', '/system/user-api/list', undefined, boss);
    expect(people.body.data).toHaveLength(USERS - 1);
    // A plain person: their own password, their role, nothing more.
    const plain = await loginAt(base, '100001', 'u1', PEOPLE_PASSWORD);
    expect((await call(base, 'GET', '/auth/me', undefined, plain)).body.data.roles).toEqual(['user']);
    expect((await call(base, 'POST', '/system/dept-api', { parentId: Number(deptIdOf(1, 0)), deptName: 'Nope' }, plain)).status).toBe(403);
    // RuoYi's role 'test1' is a user here; a deleted role counts for nothing.
    expect((await call(base, 'GET', '/auth/me', undefined, await loginAt(base, '000000', 'test1', '666666'))).body.data.roles).toEqual(['user']);
  }, 120_000);

  it('every login rule applies to imported people: disabled, deleted, suspended and expired tenants, lockout', async () => {
    const base = service!.base;
    const login = (tenantId: string, username: string, password = PEOPLE_PASSWORD) =>
      call(base, 'POST', '/auth/login', { tenantId, username, password });
    expect((await login('100001', 'u50')).status).toBe(403); // disabled in RuoYi
    expect((await login('100001', 'u97')).body.msg).toMatch(/deleted/); // deleted in RuoYi
    expect((await login('100003', 'admin')).body.msg).toMatch(/disabled/i);
    expect((await login('100004', 'admin')).status).toBe(403);
    expect((await login('100005', 'admin')).body.msg).toMatch(/expired|period|ended/i);
    for (let i = 0; i < 5; i++) expect((await login('100002', 'u3', 'wrong-password')).status).toBe(401);
    expect((await login('100002', 'u3')).status).toBe(429);
  });

  it("the first login replaces a BCrypt hash by the service's scrypt hash", async () => {
    await stop();
    const hashes = await inspectTarget(
      db,
      (sql) => sql<{ userName: string; hash: string }[]>`
      SELECT user_name AS "userName", password_hash AS hash FROM sys_user
      WHERE (tenant_id = '000000' AND user_name = 'admin') OR (tenant_id = '100001' AND user_name IN ('u1', 'u2'))
      ORDER BY user_name`,
    );
    expect(hashes.map((h) => [h.userName, h.hash.slice(0, 7)])).toEqual([
      ['admin', 'scrypt$'],
      ['u1', 'scrypt$'],
      ['u2', '$2b$04$'],
    ]);
  });

  it('a second run over the same source changes nothing, records nothing, and says so', async () => {
    const records = () => inspectTarget(db, async (sql) => (await sql`SELECT 1 FROM audit_log WHERE action = 'tenant.import'`).length);
    expect(await records()).toBe(TENANTS + 1);
    const again = await importRun();
    expect(again.code, again.output).toBe(0);
    expect(again.output).toContain('Nothing changed since the last import: nothing written, nothing recorded.');
    expect(again.output).toMatch(new RegExp(`departments\\s+0\\s+0\\s+${TENANTS * DEPTS + 5}`));
    expect(await records()).toBe(TENANTS + 1);
  }, 60_000);

  it('a run after the source changed brings the changes, keeping a password changed in the service since', async () => {
    let base = await start();
    const boss = await loginAt(base, '100001', 'admin', PEOPLE_PASSWORD);
    const u4 = (await call(base, 'GET', `/system/user-api/${userIdOf(1, 4)}`, undefined, boss)).body.data;
    const reset = {
      userId: u4.userId,
      userName: u4.userName,
      nickName: u4.nickName,
      deptId: u4.deptId,
      roles: ['user'],
      password: 'set-in-service-1',
    };
    expect((await call(base, 'PUT', '/system/user-api', reset, boss)).status).toBe(200);
    if (db.kind === 'embedded') await stop();
    const hash = bcrypt.hashSync('changed-in-ruoyi-1', 4);
    await source.exec('UPDATE sys_user SET password = ? WHERE user_id IN (?, ?)', [hash, userIdOf(1, 2), userIdOf(1, 4)]);
    await source.exec('UPDATE sys_dept SET dept_name = ? WHERE dept_id = ?', ['Dept One', deptIdOf(1, 1)]);
    await source.insert('sys_dept', [
      { dept_id: deptIdOf(1, 999), tenant_id: '100001', parent_id: deptIdOf(1, 0), ancestors: '', dept_name: 'New in RuoYi' },
    ]);
    const changed = await importRun();
    expect(changed.code, changed.output).toBe(0);
    expect(changed.output).toMatch(/departments\s+1\s+1\s+/);
    expect(changed.output).toMatch(/users\s+0\s+2\s+/);
    if (!service) base = await start();
    // The password set in the service is kept; the one never used since is RuoYi's new one.
    const login = (username: string, password: string) => call(base, 'POST', '/auth/login', { tenantId: '100001', username, password });
    expect((await login('u4', 'changed-in-ruoyi-1')).status).toBe(401);
    expect((await login('u4', 'set-in-service-1')).status).toBe(200);
    expect((await login('u2', 'changed-in-ruoyi-1')).status).toBe(200);
    const token = await loginAt(base, '100001', 'admin', PEOPLE_PASSWORD);
    const names = (await call(base, 'GET', '/system/dept-api/list', undefined, token)).body.data.map((d: { deptName: string }) => d.deptName);
    expect(names).toEqual(expect.arrayContaining(['Dept One', 'New in RuoYi']));
    expect(names).not.toContain('Dept 1');
  }, 120_000);

  it('ids and codes the service hands out never meet imported ones and stay within 2^53-1', async () => {
    const base = service!.base;
    const boss = await loginAt(base, '100001', 'admin', PEOPLE_PASSWORD);
    const created = await call(base, 'POST', '/system/dept-api', { parentId: Number(deptIdOf(1, 0)), deptName: 'Made here' }, boss);
    expect(created.status).toBe(200);
    const deptId = Number(/(\d+)$/.exec(String(created.headers.get('location')))![1]);
    expect(deptId).toBeGreaterThan(Number(deptIdOf(TENANTS, DEPTS - 1)));
    expect(deptId).toBeLessThanOrEqual(Number.MAX_SAFE_INTEGER);
    const admin = await loginAt(base, '000000', 'admin', ADMIN_PASSWORD);
    const tenant = await call(
      base,
      'POST',
      '/system/tenant-api',
      { tenantName: 'Made here', companyName: 'Made here Ltd', contactUserName: 'c', contactPhone: '1' },
      admin,
    );
    expect(tenant.status).toBe(200);
    const read = await call(base, 'GET', String(tenant.headers.get('location')), undefined, admin);
    expect(Number(read.body.data.tenantId)).toBeGreaterThan(100000 + TENANTS);
  }, 60_000);
});
