import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createDeptTenantClient, isApiError, type DeptTenantClient } from '@dept-tenant/client';
import { createTenant } from '@dept-tenant/testcontainers';

// On the shared service (global-setup.ts), in a tenant of this file's own.
let admin: DeptTenantClient;
let top: number | string;

beforeAll(async () => {
  const { baseUrl, adminToken } = inject('deptTenant');
  const tenant = await createTenant(createDeptTenantClient({ baseUrl, token: adminToken }));
  admin = tenant.client;
  const [root] = await admin.api.deptTree();
  top = root!.deptId;
});

async function createDept(parentId: number | string, deptName: string): Promise<number> {
  const created = await admin.call('createDept', { body: { parentId, deptName } });
  if (!created.ok) throw created.error;
  return Number(created.location!.split('/').pop());
}

describe('departments, through the typed client', () => {
  it('builds a tree and reads it back', async () => {
    const sales = await createDept(top, 'Sales');
    await createDept(sales, 'Sales North');
    const [root] = await admin.api.deptTree();
    const salesNode = root!.children.find((d) => d.deptName === 'Sales');
    expect(salesNode?.children.map((d) => d.deptName)).toEqual(['Sales North']);
  });

  it('refuses a move under its own child with a typed 409', async () => {
    const parent = await createDept(top, 'Parent');
    const child = await createDept(parent, 'Child');
    const { data: dept, etag } = await admin.read('getDept', { path: { id: String(parent) } });
    const moved = await admin.call('updateDept', { body: { deptId: dept.deptId, parentId: child, deptName: dept.deptName }, ifMatch: etag });
    expect(moved.ok).toBe(false);
    if (!moved.ok) {
      expect(moved.error.code).toBe(409);
      expect(moved.error.msg).toMatch(/ancestor|cycle|descendant|itself/i);
    }
  });

  it('refuses to delete a department that has children', async () => {
    const parent = await createDept(top, 'Holding');
    await createDept(parent, 'Subsidiary');
    const err = await admin.api.deleteDepts({ path: { id: String(parent) } }).catch((e: unknown) => e);
    expect(isApiError(err, 409)).toBe(true);
  });
});
