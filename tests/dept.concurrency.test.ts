import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createdId, type Client, type TestApp } from './support/app.js';
import { expectTreeInvariants } from './support/invariants.js';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';

// Races and arbitrary request sequences must never break the tree. On
// PostgreSQL the requests below really run in parallel (a pool of 20
// connections); on PGlite they are serialised by its single connection.

let t: TestApp;
let admin: Client;
let root: number;

beforeAll(async () => {
  t = await buildTestApp();
  ({ rootDeptId: root, admin } = await createTenantWithAdmin(t));
});
afterAll(async () => t?.close());
afterEach(async () => expectTreeInvariants(t.sql));

const create = async (parentId: number, deptName: string) => createdId(await admin.post('/system/dept-api', { parentId, deptName }));
const move = (deptId: number, parentId: number, deptName: string) => admin.put('/system/dept-api', { deptId, parentId, deptName });

describe('concurrency', () => {
  it('two opposite moves fired together never both succeed', async () => {
    for (let round = 0; round < 10; round++) {
      const a = await create(root, `A${round}`);
      const b = await create(root, `B${round}`);
      const [ab, ba] = await Promise.all([move(a, b, `A${round}`), move(b, a, `B${round}`)]);
      const statuses = [ab.status, ba.status].sort();
      expect(statuses).toEqual([200, 409]);
    }
  });

  it('a chain of crossing moves among many departments never forms a cycle', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 8; i++) ids.push(await create(root, `Ring${i}`));
    // Each tries to move under the next one round the ring: all but one must fail.
    const results = await Promise.all(ids.map((id, i) => move(id, ids[(i + 1) % ids.length]!, `Ring${i}`)));
    const ok = results.filter((r) => r.status === 200).length;
    expect(ok).toBe(ids.length - 1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(1);
  });

  it('20 concurrent creates of one sibling name give exactly one success', async () => {
    const parent = await create(root, 'Race parent');
    const results = await Promise.all(Array.from({ length: 20 }, () => admin.post('/system/dept-api', { parentId: parent, deptName: 'Same name' })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(19);
    const [row] = await t.sql<{ n: number }[]>`
      SELECT count(*) AS n FROM sys_dept WHERE parent_id = ${parent} AND dept_name = 'Same name' AND del_flag = '0'`;
    expect(row!.n).toBe(1);
  });

  it('a create racing the delete of its parent never leaves a live orphan', async () => {
    for (let round = 0; round < 10; round++) {
      const parent = await create(root, `Doomed${round}`);
      const [created, deleted] = await Promise.all([
        admin.post('/system/dept-api', { parentId: parent, deptName: 'Child' }),
        admin.delete(`/system/dept-api/${parent}`),
      ]);
      // Either order is fine; both succeeding is not.
      expect([created.status, deleted.status].sort()).toEqual(created.status === 200 ? [200, 409] : [200, 400]);
    }
  });
});

type Live = { deptId: number; parentId: number; deptName: string; status: string }[];
const live = async () => (await admin.get('/system/dept-api/list')).body.data as Live;

/** One random write on the departments in `depts` (create, move, status change or delete), drawn with `rand`. */
function randomWrite(depts: Live, rand: (n: number) => number) {
  const pick = () => depts[rand(depts.length)]!;
  const op = rand(10);
  if (op < 4 || depts.length < 3) {
    return admin.post('/system/dept-api', { parentId: rand(5) === 0 ? 0 : pick().deptId, deptName: `R${rand(40)}` });
  }
  if (op < 7) {
    const d = pick();
    return admin.put('/system/dept-api', { deptId: d.deptId, parentId: rand(6) === 0 ? 0 : pick().deptId, deptName: d.deptName, status: d.status });
  }
  if (op < 8) {
    const d = pick();
    return admin.put('/system/dept-api', { deptId: d.deptId, parentId: d.parentId, deptName: d.deptName, status: d.status === '0' ? '1' : '0' });
  }
  return admin.delete(`/system/dept-api/${[pick().deptId, pick().deptId].join(',')}`);
}

/** A small deterministic PRNG, so a failure can be replayed. */
function prng(seed: number) {
  return (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
}

describe('random request sequences', () => {
  it('keep every invariant after 300 mixed creates, moves, status changes and deletes', async () => {
    const rand = prng(20261122);
    const statuses = new Map<number, number>();
    for (let step = 0; step < 300; step++) {
      const res = await randomWrite(await live(), rand);
      // Every answer is a deliberate one: success or a client error, never a 500.
      expect([200, 400, 404, 409]).toContain(res.status);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (step % 50 === 49) await expectTreeInvariants(t.sql);
    }
    expect(statuses.get(200)).toBeGreaterThan(50);
  });

  it('keep every invariant after 400 random writes sent 20 at a time', async () => {
    // Writes of one tenant run side by side, each locking only the rows its rules read: creates under
    // a subtree being moved, crossing moves, deletes racing creates and disables all meet here. They
    // take their locks in id order, so none waits in a circle: no deadlock, none answered 503.
    const rand = prng(20261124);
    const statuses = new Map<number, number>();
    for (let batch = 0; batch < 20; batch++) {
      const depts = await live();
      const replies = await Promise.all(Array.from({ length: 20 }, () => randomWrite(depts, rand)));
      for (const res of replies) {
        expect([200, 400, 404, 409]).toContain(res.status);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
      if (batch % 5 === 4) await expectTreeInvariants(t.sql);
    }
    expect(statuses.get(200)).toBeGreaterThan(100);
  });
});
