import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, loginAt, run, serviceDatabase, startService, type Service, type ServiceDatabase } from './support/service.js';
import { load, mysqlUnreachable, ruoyiSource, type RuoyiSource } from './support/ruoyi-source.js';
import { deptIdOf, PEOPLE_PASSWORD, ruoyiRows, userIdOf } from './support/ruoyi-data.js';

// Ids beyond 2^53-1 (docs/api-rules.md#ids), as RuoYi-Vue-Plus's snowflakes
// are: a source whose departments and people all have such ids comes in,
// and through HTTP every such id is a JSON string (exact), every other a
// number; requests take either form; the tree nests, moves check cycles,
// people sign in with their RuoYi passwords, and the ids the service then
// hands out are numbers within 2^53-1.

const unreachable = await mysqlUnreachable();
const DEPTS = 25;
const USERS = 6;
const big = (j: number) => deptIdOf(1, j, true);

describe.skipIf(unreachable !== undefined)('ids beyond 2^53-1 brought in from RuoYi', () => {
  let source: RuoyiSource;
  let db: ServiceDatabase;
  let service: Service;
  let token: string;
  const api = (method: string, path: string, body?: unknown) => call(service.base, method, path, body, token);

  beforeAll(async () => {
    source = await ruoyiSource('mysql');
    await load(source, ruoyiRows({ tenants: 1, depts: DEPTS, users: USERS, bigIds: true }));
    db = await serviceDatabase();
    const imported = run('import-ruoyi', db.env, ['--from', source.url]);
    expect((await imported.exited).code, imported.output()).toBe(0);
    service = await startService(db.env);
    token = await loginAt(service.base, '100001', 'admin', PEOPLE_PASSWORD);
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
    await source?.dispose();
    await db?.dispose();
  });

  it('answers such ids as exact strings, any other as a number, in the list, by id, in the tree and for the signed-in person', async () => {
    const list = (await api('GET', '/system/dept-api/list')).body.data as { deptId: unknown; parentId: unknown; ancestors: string }[];
    expect(list).toHaveLength(DEPTS);
    expect(new Set(list.map((d) => d.deptId))).toEqual(new Set(Array.from({ length: DEPTS }, (_, j) => big(j))));
    const child = list.find((d) => d.deptId === big(11))!;
    expect(child).toMatchObject({ parentId: big(1), ancestors: `0,${big(0)},${big(1)}` });
    expect(list.find((d) => d.deptId === big(0))!.parentId).toBe(0);

    const one = await api('GET', `/system/dept-api/${big(11)}`);
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(child);

    type Node = { deptId: string; children: Node[] };
    const tree = (await api('GET', '/system/dept-api/tree')).body.data as Node[];
    expect(tree.map((n) => n.deptId)).toEqual([big(0)]);
    expect(new Set(tree[0]!.children.map((n) => n.deptId))).toEqual(new Set(Array.from({ length: 10 }, (_, j) => big(j + 1))));
    expect(tree[0]!.children.find((n) => n.deptId === big(1))!.children.map((n) => n.deptId)).toContain(big(11));

    const me = (await api('GET', '/auth/me')).body.data;
    expect(me.user).toMatchObject({ userId: userIdOf(1, 0, true), deptId: big(0) });
    const people = (await api('GET', `/system/user-api/list?deptId=${big(1)}`)).body.data as { userId: unknown; deptId: unknown }[];
    expect(people.map((u) => u.userId)).toEqual([userIdOf(1, 1, true)]);
    expect(people[0]!.deptId).toBe(big(1));

    // The chart as a file keeps every digit: exported, imported again, nothing changes.
    const auth = { authorization: `Bearer ${token}` };
    const csv = await (await fetch(`${service.base}/system/dept-api/export?format=csv`, { headers: auth })).text();
    expect(csv).toContain(`${big(11)},${big(1)},Dept 11`);
    const again = await fetch(`${service.base}/system/dept-api/import`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'text/csv' },
      body: csv,
    });
    const answer = (await again.json()) as { data: unknown };
    expect(again.status, JSON.stringify(answer)).toBe(200);
    expect(answer.data).toEqual({ created: 0, updated: 0, unchanged: DEPTS });
  });

  it('takes such an id as a string and any id as a number or a string; moves keep paths and refuse cycles', async () => {
    // A new department under an imported one: its own id a number within 2^53-1, its path through the big ids.
    const made = await api('POST', '/system/dept-api', { parentId: big(2), deptName: 'Made here' });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const id = Number(/(\d+)$/.exec(String(made.headers.get('location')))![1]);
    expect(id).toBeLessThanOrEqual(Number.MAX_SAFE_INTEGER);
    const read = (await api('GET', `/system/dept-api/${id}`)).body.data;
    expect(read).toMatchObject({ deptId: id, parentId: big(2), ancestors: `0,${big(0)},${big(2)}` });
    // The same id as a decimal string names the same department.
    const under = await api('POST', '/system/dept-api', { parentId: String(id), deptName: 'Below it' });
    expect(under.status, JSON.stringify(under.body)).toBe(200);

    // A move of an imported subtree under another imported department: the paths below follow.
    const current = (await api('GET', `/system/dept-api/${big(1)}`)).body.data;
    expect((await api('PUT', '/system/dept-api', { ...current, parentId: big(3) })).status).toBe(200);
    expect((await api('GET', `/system/dept-api/${big(11)}`)).body.data.ancestors).toBe(`0,${big(0)},${big(3)},${big(1)}`);
    // Under one of its own descendants: a cycle, refused.
    const cycle = await api('PUT', '/system/dept-api', { ...current, parentId: big(11) });
    expect(cycle.status).toBe(409);
    // Beyond the 64-bit range: no department can have it.
    expect((await api('POST', '/system/dept-api', { parentId: '9999999999999999999', deptName: 'Nowhere' })).status).toBe(400);
    expect((await api('GET', '/system/dept-api/9999999999999999999')).status).toBe(404);

    // A person placed in an imported department by its id as a string; deleting the new departments.
    const person = await api('POST', '/system/user-api', {
      userName: 'placed',
      nickName: 'Placed',
      password: 'placed-pw-1',
      roles: ['user'],
      deptId: big(4),
    });
    expect(person.status, JSON.stringify(person.body)).toBe(200);
    expect((await api('GET', String(person.headers.get('location')))).body.data.deptId).toBe(big(4));
    const belowId = Number(/(\d+)$/.exec(String(under.headers.get('location')))![1]);
    expect((await api('DELETE', `/system/dept-api/${belowId}`)).status).toBe(200);
    expect((await api('DELETE', `/system/dept-api/${id}`)).status).toBe(200);
  });
});
