import { readFile } from 'node:fs/promises';
import { Value } from '@sinclair/typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TenantUpdate, PackageBoWrite, QuotaBo, RuleBo } from '../src/tenants/tenant.schema.js';
import { buildTestApp, createdId, type Client, type TestApp } from './support/app.js';
import { createTenantWithAdmin, writable, type TenantDto } from './support/tenant-fixtures.js';

// docs/api-rules.md#departments (department depth at most 50 levels, create and move),
// docs/api-rules.md#requests-and-answers (strings in bodies and queries are valid Unicode: a lone surrogate or an
// invalid byte sequence is a 400, never stored as U+FFFD), and the platform
// tenant's bootstrap values (a GET of any tenant is a body a PUT accepts).

let t: TestApp;
let admin: Client;
let rootDeptId: number;
beforeAll(async () => {
  t = await buildTestApp();
  ({ admin, rootDeptId } = await createTenantWithAdmin(t));
});
afterAll(async () => t?.close());

const DEPT = '/system/dept-api';
const levelOf = (ancestors: string) => ancestors.split(',').length;

describe('department depth (at most 50 levels)', () => {
  /** ids[i] is the department at level i + 1: the tenant's root, then a chain below it. */
  const chain: number[] = [];
  beforeAll(async () => {
    chain.push(rootDeptId);
    for (let level = 2; level <= 50; level++) {
      chain.push(createdId(await admin.post(DEPT, { parentId: chain.at(-1), deptName: `L${level}` })));
    }
  });

  it('a create at level 50 is accepted, at level 51 refused (409)', async () => {
    const fiftieth = await admin.get(`${DEPT}/${chain[49]}`);
    expect(levelOf(fiftieth.body.data.ancestors)).toBe(50);
    const refused = await admin.post(DEPT, { parentId: chain[49], deptName: 'L51' });
    expect(refused.status).toBe(409);
    expect(refused.body.msg).toMatch(/50 levels/);
    expect((await admin.get(`${DEPT}/list?deptName=L51`)).body.data).toEqual([]);
  });

  it('moving a two-level subtree so its leaf would be at 51 is refused and changes nothing; one level higher fits', async () => {
    const top = createdId(await admin.post(DEPT, { parentId: 0, deptName: 'Moved' }));
    const leaf = createdId(await admin.post(DEPT, { parentId: top, deptName: 'Leaf' }));
    const before = [(await admin.get(`${DEPT}/${top}`)).body.data, (await admin.get(`${DEPT}/${leaf}`)).body.data];

    // Under level 49: the moved department would be at 50, its child at 51.
    const refused = await admin.put(DEPT, { deptId: top, parentId: chain[48], deptName: 'Moved' });
    expect(refused.status).toBe(409);
    expect(refused.body.msg).toMatch(/level 51/);
    expect([(await admin.get(`${DEPT}/${top}`)).body.data, (await admin.get(`${DEPT}/${leaf}`)).body.data]).toEqual(before);

    // Under level 48: 49 and 50.
    expect((await admin.put(DEPT, { deptId: top, parentId: chain[47], deptName: 'Moved' })).status).toBe(200);
    expect(levelOf((await admin.get(`${DEPT}/${leaf}`)).body.data.ancestors)).toBe(50);
  });
});

describe('strings are valid Unicode', () => {
  const raw = (method: 'POST' | 'PUT' | 'GET', url: string, payload?: string | Buffer) =>
    t.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${admin.token}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { payload }),
    });
  const noReplacementStored = async () => {
    const [row] = await t.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sys_dept WHERE dept_name LIKE ${'%\uFFFD%'}`;
    expect(row!.n).toBe(0);
  };

  it('a lone surrogate escaped in a JSON body is a 400 naming the field, and nothing is stored', async () => {
    for (const escape of ['\\ud800', '\\udfff', '\\ude00x\\ud83d']) {
      const res = await raw('POST', DEPT, `{"parentId":0,"deptName":"a${escape}b"}`);
      expect(res.statusCode).toBe(400);
      expect(res.json().msg).toMatch(/body\.deptName.*surrogate/);
    }
    await noReplacementStored();
    // A proper pair (an emoji) is fine and stored as sent.
    const ok = await raw('POST', DEPT, '{"parentId":0,"deptName":"smile \\ud83d\\ude00"}');
    expect(ok.statusCode).toBe(200);
    expect((await admin.get(String(ok.headers.location))).body.data.deptName).toBe('smile \u{1F600}');
  });

  it('nested fields are named, and bytes that are not UTF-8 are refused too', async () => {
    const nested = await t.root.post('/system/tenant-api', {
      tenantName: 'X',
      companyName: `Surrogate ${Math.random()}`,
      contactUserName: 'Y',
      contactPhone: '1',
      ruleBo: { modelZr: 'ok\ud800' },
    });
    expect(nested.status).toBe(400);
    expect(nested.body.msg).toMatch(/body\.ruleBo\.modelZr/);
    const bytes = Buffer.concat([Buffer.from('{"parentId":0,"deptName":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const res = await raw('POST', DEPT, bytes);
    expect(res.statusCode).toBe(400);
    expect(res.json().msg).toMatch(/UTF-8/);
    await noReplacementStored();
  });

  it('a query value that is not UTF-8 once decoded (an encoded surrogate, a stray byte) is a 400 naming the parameter', async () => {
    for (const value of ['%ED%A0%80', '%FF', 'a%C3']) {
      const res = await raw('GET', `${DEPT}/list?deptName=${value}`);
      expect(res.statusCode, value).toBe(400);
      expect(res.json().msg).toMatch(/query\.deptName/);
    }
    const nul = await raw('GET', `${DEPT}/list?deptName=a%00`);
    expect(nul.statusCode).toBe(400);
    expect(nul.json().msg).toMatch(/query\.deptName.*NUL/);
    // Valid text, a literal '%' and '+' as a space all still work.
    for (const value of ['%E4%B8%AD', '100%', 'a+b']) expect((await raw('GET', `${DEPT}/list?deptName=${value}`)).statusCode, value).toBe(200);
  });
});

describe('the platform tenant', () => {
  const platform = async () => {
    const list = await t.root.get('/system/tenant-api/list?pageSize=1000');
    return list.body.data.rows.find((r: TenantDto) => r.tenantId === '000000') as TenantDto;
  };

  it('reads back as a body the tenant schema accepts (its PUT is refused only because it is the platform)', async () => {
    const dto = await platform();
    const body = writable(dto);
    expect([...Value.Errors(TenantUpdate, [PackageBoWrite, QuotaBo, RuleBo], body)].map((e) => `${e.path} ${e.message}`)).toEqual([]);
    const res = await t.root.put('/system/tenant-api', body);
    expect(res.status).toBe(403);
    expect(res.body.msg).toMatch(/platform/);
  });

  it('a database bootstrapped before the fix is repaired by migration 002', async () => {
    await t.sql`UPDATE sys_tenant SET contact_phone = '' WHERE tenant_id = '000000'`;
    expect((await t.root.put('/system/tenant-api', writable(await platform()))).status).toBe(400);
    await t.sql.unsafe(await readFile(new URL('../sql/002_security.sql', import.meta.url), 'utf8'));
    const dto = await platform();
    expect(dto.contactPhone).toBe('0');
    expect((await t.root.put('/system/tenant-api', writable(dto))).status).toBe(403);
  });
});
