import { hashPassword } from '../../src/auth/password.js';
import type { Client, TestApp } from './app.js';

/**
 * A second tenant with a root department and an `admin`, for isolation tests
 * of departments and users. Written with SQL because those tests concern
 * only departments and users; tenant creation itself is tested through
 * /system/tenant-api.
 */
export async function createTenantWithAdmin(
  t: TestApp,
  options: { accountCount?: number } = {},
): Promise<{ tenantId: string; rootDeptId: number; admin: Client }> {
  const password = 'tenant-admin-pw';
  const hash = await hashPassword(password);
  const [tenant] = await t.sql<{ tenantId: string }[]>`
    INSERT INTO sys_tenant (tenant_parent, ancestors, tenant_name, company_name, contact_user_name, contact_phone, account_count)
    VALUES ('000000', '000000', 'Fixture', ${'Fixture ' + Math.random().toString(36).slice(2)}, 'c', '1', ${options.accountCount ?? -1})
    RETURNING tenant_id AS "tenantId"`;
  const tenantId = tenant!.tenantId;
  const [dept] = await t.sql<{ deptId: number }[]>`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name) VALUES (${tenantId}, 0, '0', 'Root')
    RETURNING dept_id AS "deptId"`;
  await t.sql`
    INSERT INTO sys_user (tenant_id, dept_id, user_name, role, password_hash)
    VALUES (${tenantId}, ${dept!.deptId}, 'admin', 'admin', ${hash})`;
  return { tenantId, rootDeptId: dept!.deptId, admin: await t.login(tenantId, 'admin', password) };
}
