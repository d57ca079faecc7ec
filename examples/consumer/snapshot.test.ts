import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeptTenantContainer, type CreatedTenant, type StartedDeptTenantContainer } from '@dept-tenant/testcontainers';

// A service of this file's own, brought back to one saved state after every
// test: what a test changes (data, sessions) never reaches the next one.
// A restore replaces the whole service's data, so a file that uses it does
// not share its service with files running in parallel.
let service: StartedDeptTenantContainer;
let acme: CreatedTenant;

beforeAll(async () => {
  service = await new DeptTenantContainer().withAdminPassword('example-admin-1').start();
  acme = await service.createTenant({ tenantName: 'Acme' });
  await service.snapshot();
});
afterEach(() => service.restore());
afterAll(() => service?.stop());

describe('snapshot and restore between tests', () => {
  it('a test adds a department and a tenant', async () => {
    const [root] = await acme.client.api.deptTree();
    await acme.client.api.createDept({ body: { parentId: root!.deptId, deptName: 'Temporary' } });
    await service.createTenant({ tenantName: 'Short-lived' });
    expect((await acme.client.api.deptTree())[0]!.children).toHaveLength(1);
  });

  it('the next test finds the saved state, and the clients from before still work', async () => {
    expect((await acme.client.api.deptTree())[0]!.children).toHaveLength(0);
    const names: string[] = [];
    for await (const tenant of service.admin.rows('listTenants')) names.push(tenant.tenantName);
    expect(names).toContain('Acme');
    expect(names).not.toContain('Short-lived');
  });

  it('a session opened after the snapshot does not survive the restore', async () => {
    const later = service.client();
    await later.login({ tenantId: acme.tenant.tenantId, username: acme.username, password: acme.password });
    await service.restore();
    const refused = await later.call('me');
    expect(!refused.ok && refused.error.code).toBe(401);
  });
});
