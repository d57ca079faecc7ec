import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { call, loginAt, run, serviceDatabase, startService, type ServiceDatabase } from './support/service.js';
import { load, mysqlUnreachable, ruoyiSource, type RuoyiSource } from './support/ruoyi-source.js';
import { ADMIN_PASSWORD, deptIdOf, PEOPLE_PASSWORD, ruoyiRows, userIdOf } from './support/ruoyi-data.js';
import { inspectTarget } from './support/ruoyi-target.js';

// docs/migrate-from-ruoyi.md#the-problems-report: a source with every kind of
// problem is refused whole (exit 1), each problem named by its source table
// and id, nothing written, a dry run too; and the same import from a
// RuoYi database on PostgreSQL, times read as wall-clock times of TZ.

const unreachable = await mysqlUnreachable();
if (unreachable) console.warn(`tests/ruoyi.problems.test.ts: the MariaDB source is skipped: ${unreachable}`);
const pgServer = inject('databaseUrl') || process.env.TEST_RUOYI_PG_URL;
const noPg = pgServer ? undefined : 'no PostgreSQL server to hold the source (the suite runs on PGlite; set TEST_RUOYI_PG_URL)';
if (noPg) console.warn(`tests/ruoyi.problems.test.ts: the PostgreSQL source is skipped: ${noPg}`);

async function importInto(db: ServiceDatabase, source: RuoyiSource, args: string[] = []) {
  const r = run('import-ruoyi', db.env, ['--from', source.url, ...args]);
  return { code: (await r.exited).code, output: r.output() };
}

describe.skipIf(unreachable !== undefined)(`problems in the source${unreachable ? ` (skipped: ${unreachable})` : ''}`, () => {
  let source: RuoyiSource;
  let db: ServiceDatabase;
  beforeAll(async () => {
    source = await ruoyiSource('mysql');
    const rows = ruoyiRows({ tenants: 2, depts: 12, users: 5 });
    // The platform's chart without its 100, which the target's first start already gave the platform:
    // a department 100 of tenant 100001 is then an id the target uses for something else.
    rows.sys_dept = rows.sys_dept.filter((d) => d.dept_id !== 100);
    for (const d of rows.sys_dept) if (d.parent_id === 100) Object.assign(d, { parent_id: 0, ancestors: '0' });
    const dept = (id: number | string, parent: string | number, name: string, extra: object = {}) =>
      rows.sys_dept.push({
        dept_id: id,
        tenant_id: '100001',
        parent_id: parent,
        ancestors: '0',
        dept_name: name,
        status: '0',
        del_flag: '0',
        ...extra,
      });
    dept(100, deptIdOf(1, 0), 'Taken id');
    dept(900001, 999999, 'Orphan');
    dept(900002, 900003, 'Cycle A');
    dept(900003, 900002, 'Cycle B');
    dept(900004, deptIdOf(1, 0), 'Dept 1');
    dept(900005, deptIdOf(1, 0), 'Bad mail', { email: 'not-an-email' });
    // A snowflake id beyond 2^53-1 is no problem (docs/api-rules.md#ids): the API carries it as a string.
    dept('1800000000000000001', deptIdOf(1, 0), 'Snowflake');
    const user = (id: number, name: string, deptId: string | number) =>
      rows.sys_user.push({
        user_id: id,
        tenant_id: '100001',
        dept_id: deptId,
        user_name: name,
        nick_name: name,
        password: '',
        status: '0',
        del_flag: '0',
      });
    user(100, 'taken-id', deptIdOf(1, 1));
    user(900010, 'lost', 888888);
    user(900011, 'has space', deptIdOf(1, 1));
    user(900012, 'u1', deptIdOf(1, 2));
    rows.sys_tenant.push({
      id: '1790000000000000099',
      tenant_id: '12345',
      contact_user_name: 'c',
      contact_phone: '1',
      company_name: 'Short code',
      status: '0',
      del_flag: '0',
    });
    await load(source, rows);
    db = await serviceDatabase();
  }, 120_000);
  afterAll(async () => {
    await source?.dispose();
    await db?.dispose();
  });

  it('lists every problem with its source table and id, exits 1 and writes nothing; --dry-run too', async () => {
    for (const args of [['--dry-run'], []]) {
      const { code, output } = await importInto(db, source, args);
      expect(code, output).toBe(1);
      for (const line of [
        "sys_dept 100: dept_id 100 is a department of the target's tenant 000000",
        'sys_dept 900001: parent_id 999999 names no department of tenant 100001',
        'sys_dept 900002: is its own ancestor',
        'sys_dept 900003: is its own ancestor',
        `sys_dept 900004: dept_name "Dept 1" under ${deptIdOf(1, 0)} is already used by live sys_dept ${deptIdOf(1, 1)}`,
        'sys_dept 900005: email "not-an-email" would be refused',
        "sys_user 100: user_id 100 is a user of the target's tenant 000000",
        'sys_user 900010: dept_id 888888 names no department of tenant 100001',
        'sys_user 900011: userName "has space" would be refused',
        `sys_user 900012: user_name "u1" in tenant 100001 is already used by live sys_user ${userIdOf(1, 1)}`,
        'sys_tenant 1790000000000000099: tenantId "12345" would be refused',
        'nothing was written',
      ])
        expect(output).toContain(line);
    }
    const written = await inspectTarget(db, async (sql) => ({
      tenants: (await sql`SELECT 1 FROM sys_tenant`).length,
      rows: (await sql`SELECT 1 FROM ruoyi_import_row`).length,
      records: (await sql`SELECT 1 FROM audit_log WHERE action = 'tenant.import'`).length,
    }));
    expect(written).toEqual({ tenants: 1, rows: 0, records: 0 });
  }, 120_000);
});

describe.skipIf(noPg !== undefined)(`import-ruoyi from PostgreSQL${noPg ? ` (skipped: ${noPg})` : ''}`, () => {
  let source: RuoyiSource;
  let db: ServiceDatabase;
  beforeAll(async () => {
    source = await ruoyiSource('postgres', pgServer);
    await load(source, ruoyiRows({ tenants: 2, depts: 20, users: 10 }));
    db = await serviceDatabase();
  }, 120_000);
  afterAll(async () => {
    await source?.dispose();
    await db?.dispose();
  });

  it('imports the same shapes; times without a zone are wall-clock times of TZ', async () => {
    const { code, output } = await importInto(db, source);
    expect(code, output).toBe(0);
    expect(output).toMatch(/departments\s+44\s+1\s+0/);
    const service = await startService(db.env);
    try {
      await loginAt(service.base, '000000', 'admin', ADMIN_PASSWORD);
      const boss = await loginAt(service.base, '100002', 'admin', PEOPLE_PASSWORD);
      const list = await call(service.base, 'GET', '/system/dept-api/list', undefined, boss);
      expect(list.body.data).toHaveLength(20);
      expect(list.body.data[0]).toMatchObject({ deptId: Number(deptIdOf(2, 0)), createTime: '2024-03-01 09:30:00', leader: 'Person 2-0' });
    } finally {
      await service.stop();
    }
  }, 120_000);
});
