import type { Tx } from '../db/database.js';

// The version of the tenant rows (sql/017_tenant_list_version.sql), which
// the platform's tenant pages by number read (src/tenants/tenant.pages.ts).
// Every write of sys_tenant, whichever room makes it (tenants, packages, the
// bootstrap), moves it on in its own transaction: a trigger did until
// sql/023_one_schema_for_citus.sql, and a reference table under Citus has none.

/**
 * Rule: every statement that writes sys_tenant writes a new sequence value
 * into the slot of its server session (pg_backend_pid() % 64), so two
 * snapshots that read the same vector hold the same tenant rows
 * (sql/017_tenant_list_version.sql). Once per transaction is enough: the
 * transaction's writes become visible together.
 */
export async function bumpTenantListVersion(tx: Tx): Promise<void> {
  await tx`
    INSERT INTO sys_tenant_list_version AS v (slot, version)
    VALUES (pg_backend_pid() % 64, nextval('sys_tenant_list_version_seq'))
    ON CONFLICT (slot) DO UPDATE SET version = excluded.version`;
}
