import { beforeAll, describe, expect, inject, it } from 'vitest';
import { createDeptTenantClient, type DeptTenantClient } from '@dept-tenant/client';
import { createTenant } from '@dept-tenant/testcontainers';

// On the shared service (global-setup.ts), in a tenant of this file's own.
let admin: DeptTenantClient;
let tenantId: string;
let baseUrl: string;

beforeAll(async () => {
  const provided = inject('deptTenant');
  baseUrl = provided.baseUrl;
  const tenant = await createTenant(createDeptTenantClient({ baseUrl, token: provided.adminToken }));
  admin = tenant.client;
  tenantId = tenant.tenant.tenantId;
});

describe('users, through the typed client', () => {
  it('creates users, lists them, and lets one log in', async () => {
    const [root] = await admin.api.deptTree();
    for (const name of ['li.lei', 'han.meimei', 'wang.fang'])
      await admin.api.createUser({ body: { userName: name, password: 'user-password-1', deptId: root!.deptId, roles: ['user'] } });
    const names = (await admin.api.listUsers()).map((user) => user.userName);
    expect(names).toEqual(expect.arrayContaining(['li.lei', 'han.meimei', 'wang.fang']));

    const user = createDeptTenantClient({ baseUrl });
    await user.login({ tenantId, username: 'li.lei', password: 'user-password-1' });
    expect((await user.api.me()).user.userName).toBe('li.lei');
    // A plain user may not change the organisation: 403, typed.
    const refused = await user.call('createDept', { body: { parentId: root!.deptId, deptName: 'Not allowed' } });
    expect(!refused.ok && refused.error.code).toBe(403);
  });

  it('answers a wrong password with a typed 401', async () => {
    const outcome = await createDeptTenantClient({ baseUrl }).call('login', { body: { tenantId, username: 'li.lei', password: 'wrong-password' } });
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.error.code).toBe(401);
  });
});
