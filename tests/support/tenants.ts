import type { Client, TestApp } from './app.js';

/**
 * A child tenant of 000000 with its root department and an `admin`, made by
 * the superadmin through /system/tenant-api (provisioning with username and
 * password), for the department and user tests that need a second tenant.
 */
export async function createTenantWithAdmin(
  t: TestApp,
  options: { accountCount?: number } = {},
): Promise<{ tenantId: string; rootDeptId: number; admin: Client }> {
  const password = 'tenant-admin-pw';
  const companyName = `Fixture ${Math.random().toString(36).slice(2, 12)}`;
  const res = await t.root.post('/system/tenant-api', {
    tenantName: 'Fixture',
    companyName,
    contactUserName: 'Contact',
    contactPhone: '13800138000',
    accountCount: options.accountCount ?? -1,
    username: 'admin',
    password,
  });
  if (res.status !== 200) throw new Error(`tenant create failed: ${JSON.stringify(res.body)}`);
  // The internal id is a 19-digit string: keep it as text.
  const id = String(res.headers.location).split('/').pop();
  const tenant = await t.root.get(`/system/tenant-api/${id}`);
  const tenantId = tenant.body.data.tenantId as string;
  const admin = await t.login(tenantId, 'admin', password);
  const depts = await admin.get('/system/dept-api/list?parentId=0');
  return { tenantId, rootDeptId: depts.body.data[0].deptId as number, admin };
}

/**
 * A tenant made by `parent`'s admin, so it hangs under `parent`'s tenant,
 * with its own `admin` signed in: for the tests of what one level of the
 * tenant hierarchy sees of another.
 */
export async function childTenant(t: TestApp, parent: Client, marker: string): Promise<{ tenantId: string; admin: Client }> {
  const password = 'tenant-admin-pw';
  const res = await parent.post('/system/tenant-api', {
    tenantName: marker,
    companyName: `${marker} ${Math.random()}`,
    contactUserName: 'C',
    contactPhone: '1',
    username: 'admin',
    password,
  });
  if (res.status !== 200) throw new Error(`tenant create failed: ${JSON.stringify(res.body)}`);
  const id = String(res.headers.location).split('/').pop();
  const tenantId = (await parent.get(`/system/tenant-api/${id}`)).body.data.tenantId as string;
  return { tenantId, admin: await t.login(tenantId, 'admin', password) };
}
