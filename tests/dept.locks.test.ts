import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildTestApp, createdId, type Client, type TestApp } from './support/app.js';
import { expectTreeInvariants } from './support/invariants.js';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';

// Department writes lock the rows their rules read, not the tenant
// (docs/architecture.md, row locks). Each test holds a row lock from a
// transaction of its own, the way a concurrent write would, and shows which
// requests wait for it and which do not. A request that waits is still
// pending after WAIT_MS; one that does not finishes well inside the test's
// timeout. Needs a second connection beside the app's: PostgreSQL only.

const WAIT_MS = 400;

let t: TestApp;
let admin: Client;
let tenantId: string;
let root: number;

beforeAll(async () => {
  t = await buildTestApp();
  ({ tenantId, rootDeptId: root, admin } = await createTenantWithAdmin(t));
});
afterAll(async () => t?.close());
afterEach(async () => expectTreeInvariants(t.sql));

const create = async (parentId: number, deptName: string) => createdId(await admin.post('/system/dept-api', { parentId, deptName }));

/** Settles with the reply, or with 'pending' if it has not answered within WAIT_MS. */
async function within<T>(request: Promise<T>): Promise<T | 'pending'> {
  return Promise.race([request, new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), WAIT_MS))]);
}

/** A transaction of the test's own that holds row locks (or a half-done write) until `release`. */
async function holding(statements: (tx: TestApp['sql']) => Promise<unknown>) {
  const tx = await t.direct.reserve();
  await tx`BEGIN`;
  await statements(tx as unknown as TestApp['sql']);
  return {
    tx,
    async release() {
      await tx`COMMIT`;
      tx.release();
    },
  };
}

describe.skipIf(!inject('databaseUrl'))('department writes lock rows, not the tenant', () => {
  it('a create waits for a write on its own parent only', async () => {
    const busy = await create(root, 'Busy parent');
    const quiet = await create(root, 'Quiet parent');
    // As a rename or disable of `busy` would: its row locked for update.
    const held = await holding((tx) => tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${busy} FOR UPDATE`);
    try {
      const elsewhere = await within(admin.post('/system/dept-api', { parentId: quiet, deptName: 'Not waiting' }));
      expect(elsewhere === 'pending' ? elsewhere : elsewhere.status).toBe(200);
      const underBusy = admin.post('/system/dept-api', { parentId: busy, deptName: 'Waiting' });
      expect(await within(underBusy)).toBe('pending');
      await held.release();
      expect((await underBusy).status).toBe(200);
    } finally {
      await held.release().catch(() => {});
    }
  });

  it('creates under one parent do not wait for each other', async () => {
    const parent = await create(root, 'Shared parent');
    // As a create under `parent` in flight would: the parent share-locked, a child inserted, not committed.
    const held = await holding(async (tx) => {
      const [p] = await tx<{ ancestors: string }[]>`
        SELECT ancestors FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${parent} FOR SHARE`;
      await tx`INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name) VALUES (${tenantId}, ${parent}, ${`${p!.ancestors},${parent}`}, 'In flight')`;
    });
    try {
      const other = await within(admin.post('/system/dept-api', { parentId: parent, deptName: 'Beside it' }));
      expect(other === 'pending' ? other : other.status).toBe(200);
    } finally {
      await held.release();
    }
  });

  it('a move waits for a create in flight under its subtree, and the new department follows the move', async () => {
    const moving = await create(root, 'Moving');
    const middle = await create(moving, 'Middle');
    const leaf = await create(middle, 'Leaf');
    const target = await create(root, 'Target');
    // A create under `leaf`, as the service makes it, stopped before its commit: the move must not miss its row.
    const held = await holding(async (tx) => {
      const [p] = await tx<{ ancestors: string }[]>`
        SELECT ancestors FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${leaf} FOR SHARE`;
      await tx`INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name) VALUES (${tenantId}, ${leaf}, ${`${p!.ancestors},${leaf}`}, 'New')`;
    });
    const move = admin.put('/system/dept-api', { deptId: moving, parentId: target, deptName: 'Moving' });
    try {
      expect(await within(move)).toBe('pending');
    } finally {
      await held.release();
    }
    expect((await move).status).toBe(200);
    const [row] = await t.sql<{ ancestors: string }[]>`SELECT ancestors FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_name = 'New'`;
    expect(row!.ancestors).toBe(`0,${root},${target},${moving},${middle},${leaf}`);
  });

  it('a create under a subtree being moved waits, then takes the new path', async () => {
    const moving = await create(root, 'Moving 2');
    const inner = await create(moving, 'Inner');
    const target = await create(root, 'Target 2');
    // As the move of `moving` holds it: every row of the subtree locked for update.
    const held = await holding((tx) => tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id IN (${moving}, ${inner}) FOR UPDATE`);
    let pending;
    try {
      const outside = await within(admin.post('/system/dept-api', { parentId: target, deptName: 'Outside' }));
      expect(outside === 'pending' ? outside : outside.status).toBe(200);
      pending = admin.post('/system/dept-api', { parentId: inner, deptName: 'Inside' });
      expect(await within(pending)).toBe('pending');
      await held.tx`UPDATE sys_dept SET parent_id = ${target}, ancestors = ${`0,${root},${target}`} WHERE tenant_id = ${tenantId} AND dept_id = ${moving}`;
      await held.tx`UPDATE sys_dept SET ancestors = ${`0,${root},${target},${moving}`} WHERE tenant_id = ${tenantId} AND dept_id = ${inner}`;
    } finally {
      await held.release();
    }
    const id = createdId(await pending!);
    const [row] = await t.sql<{ ancestors: string }[]>`SELECT ancestors FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${id}`;
    expect(row!.ancestors).toBe(`0,${root},${target},${moving},${inner}`);
  });

  it('moves of separate subtrees do not wait for each other; a move into a locked department does', async () => {
    const a = await create(root, 'Subtree A');
    await create(a, 'A child');
    const b = await create(root, 'Subtree B');
    const to = await create(root, 'Destination');
    const held = await holding((tx) => tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${b} FOR UPDATE`);
    try {
      const moved = await within(admin.put('/system/dept-api', { deptId: a, parentId: to, deptName: 'Subtree A' }));
      expect(moved === 'pending' ? moved : moved.status).toBe(200);
      const intoB = admin.put('/system/dept-api', { deptId: a, parentId: b, deptName: 'Subtree A' });
      expect(await within(intoB)).toBe('pending');
      await held.release();
      expect((await intoB).status).toBe(200);
    } finally {
      await held.release().catch(() => {});
    }
  });

  it('a move takes its subtree and its new parent in id order: waiting for a lower row, it holds no higher one', async () => {
    const low = await create(root, 'Low');
    const target = await create(root, 'Target 3');
    const moving = await create(root, 'Moving 3');
    // The moved subtree holds an id below its new parent's (and below its own).
    expect((await admin.put('/system/dept-api', { deptId: low, parentId: moving, deptName: 'Low' })).status).toBe(200);
    const held = await holding((tx) => tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${low} FOR UPDATE`);
    const move = admin.put('/system/dept-api', { deptId: moving, parentId: target, deptName: 'Moving 3' });
    try {
      expect(await within(move)).toBe('pending');
      // As a write that locks all three in id order (a delete of them) would go on: the waiting move is not in its way,
      // so the two queue. Had the move taken `moving` and `target` first, this would wait for it and it for this.
      await held.tx`
        SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id IN (${target}, ${moving}) ORDER BY dept_id FOR UPDATE NOWAIT`;
    } finally {
      await held.release();
    }
    expect((await move).status).toBe(200);
  });

  it('a move whose subtree gains a lower row while it waits lets go of its locks and takes them again in id order', async () => {
    const joining = await create(root, 'Joining');
    const moving = await create(root, 'Moving 4');
    const inner = await create(moving, 'Inner 4');
    const target = await create(root, 'Target 4');
    // A row referencing `joining` being inserted: its foreign key's lock, which a move of `joining` does not wait for.
    const referenced = await holding((tx) => tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${joining} FOR KEY SHARE`);
    // A move of `joining` under `inner`, stopped before its commit: `inner` share-locked, `joining` rewritten.
    const joiningMove = await holding(async (tx) => {
      await tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${inner} FOR SHARE`;
      await tx`
        UPDATE sys_dept SET parent_id = ${inner}, ancestors = ${`0,${root},${moving},${inner}`}
        WHERE tenant_id = ${tenantId} AND dept_id = ${joining}`;
    });
    const move = admin.put('/system/dept-api', { deptId: moving, parentId: target, deptName: 'Moving 4' });
    try {
      // The move waits for `inner`; once it has it, its subtree holds `joining`, below every row it locked.
      expect(await within(move)).toBe('pending');
      await joiningMove.release();
      // It let go of `moving`, `inner` and `target` to wait for `joining` first.
      expect(await within(move)).toBe('pending');
      await referenced.tx`
        SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id IN (${moving}, ${inner}, ${target}) ORDER BY dept_id FOR UPDATE NOWAIT`;
    } finally {
      await joiningMove.release().catch(() => {});
      await referenced.release();
    }
    expect((await move).status).toBe(200);
    const [row] = await t.sql<{ ancestors: string }[]>`SELECT ancestors FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${joining}`;
    expect(row!.ancestors).toBe(`0,${root},${target},${moving},${inner}`);
  });

  it('a user placed in a department holds it against its delete', async () => {
    const dept = await create(root, 'Placed');
    const held = await holding((tx) => tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${dept} FOR UPDATE`);
    let user;
    try {
      user = admin.post('/system/user-api', { userName: 'placed', nickName: 'Placed', password: 'placed-pw-1', deptId: dept, roles: ['user'] });
      expect(await within(user)).toBe('pending');
      // The held transaction deletes the department, as a delete would after its checks.
      await held.tx`UPDATE sys_dept SET del_flag = '2' WHERE tenant_id = ${tenantId} AND dept_id = ${dept}`;
    } finally {
      await held.release();
    }
    // Never a live user in a deleted department: the placement finds it gone.
    expect((await user!).status).toBe(400);
  });
});
