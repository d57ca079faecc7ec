import type { Sql } from './db/database.js';
import { LOCK } from './db/locks.js';
import { PLATFORM_TENANT } from './identity/roles.js';
import { hashPassword, randomPassword, verifyPassword } from './auth/password.js';
import { transaction } from './db/retry.js';
import { bumpTenantListVersion } from './identity/tenant.version.js';
import { keepNameGrams } from './tenants/tenant.grams.js';
import { chartBump } from './depts/dept.chart.js';

/**
 * docs/operations.md#first-start: an empty database gets the platform tenant 000000, its root
 * department and the superadmin `admin`. Runs under a lock so nodes starting
 * together create them once. Returns the generated password, if one was
 * generated, for the caller to print once.
 */
export async function bootstrap(sql: Sql, adminPassword: string | undefined): Promise<{ generatedPassword?: string }> {
  return transaction(sql, async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCK.bootstrap}, 0)`;
    const [exists] = await tx`SELECT 1 FROM sys_tenant WHERE tenant_id = ${PLATFORM_TENANT}`;
    if (exists) return {};
    const password = adminPassword ?? randomPassword();
    const [tenant] = await tx<{ id: string }[]>`
      INSERT INTO sys_tenant (tenant_id, tenant_name, company_name, contact_user_name, contact_phone, create_by)
      VALUES (${PLATFORM_TENANT}, 'Platform', 'Platform', 'admin', '0', 'system')
      RETURNING id::text AS id`;
    await keepNameGrams(tx, tenant!.id, 'Platform', false);
    await bumpTenantListVersion(tx);
    const [dept] = await tx<{ deptId: number }[]>`
      WITH created AS (
        INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, create_by)
        VALUES (${PLATFORM_TENANT}, 0, '0', 'Platform', 'system')
        RETURNING dept_id) ${chartBump(tx, PLATFORM_TENANT)}
      SELECT dept_id AS "deptId" FROM created`;
    await tx`
      INSERT INTO sys_user (tenant_id, dept_id, user_name, nick_name, role, password_hash, create_by)
      VALUES (${PLATFORM_TENANT}, ${dept!.deptId}, 'admin', 'Administrator', 'superadmin', ${await hashPassword(password)}, 'system')`;
    return adminPassword === undefined ? { generatedPassword: password } : {};
  });
}

/**
 * docs/operations.md: ADMIN_PASSWORD only seeds an empty database. When it is set
 * but no longer opens the platform `admin` (changed since, or reset), start-up
 * warns instead of silently ignoring it. False when there is no live admin.
 */
export async function adminPasswordMatches(sql: Sql, adminPassword: string): Promise<boolean> {
  const [admin] = await sql<{ passwordHash: string }[]>`
    SELECT password_hash AS "passwordHash" FROM sys_user
    WHERE tenant_id = ${PLATFORM_TENANT} AND user_name = 'admin' AND del_flag = '0'`;
  return admin !== undefined && (await verifyPassword(adminPassword, admin.passwordHash));
}
