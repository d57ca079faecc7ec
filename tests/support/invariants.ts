import { expect } from 'vitest';
import type { Sql } from '../../src/db/database.js';

/**
 * The department tree's invariants, over every tenant, from the raw rows:
 * each live department's ancestors equals the chain computed from parent_id,
 * no chain loops, and no live department hangs under a deleted or missing one.
 * Called after every mutating test.
 */
export async function expectTreeInvariants(sql: Sql): Promise<void> {
  const rows = await sql<{ tenantId: string; deptId: number; parentId: number; ancestors: string; delFlag: string }[]>`
    SELECT tenant_id AS "tenantId", dept_id AS "deptId", parent_id AS "parentId", ancestors, del_flag AS "delFlag"
    FROM sys_dept`;
  const byKey = new Map(rows.map((r) => [`${r.tenantId}:${r.deptId}`, r]));
  const problems: string[] = [];
  for (const dept of rows) {
    if (dept.delFlag !== '0') continue;
    const chain: number[] = [];
    const seen = new Set<number>([dept.deptId]);
    let parentId = dept.parentId;
    while (parentId !== 0) {
      if (seen.has(parentId)) {
        problems.push(`cycle through ${dept.tenantId}:${dept.deptId}`);
        break;
      }
      seen.add(parentId);
      const parent = byKey.get(`${dept.tenantId}:${parentId}`);
      if (!parent) {
        problems.push(`${dept.tenantId}:${dept.deptId} has missing parent ${parentId}`);
        break;
      }
      if (parent.delFlag !== '0' && chain.length === 0) {
        problems.push(`live ${dept.tenantId}:${dept.deptId} under deleted ${parentId}`);
      }
      chain.unshift(parentId);
      parentId = parent.parentId;
    }
    const expected = ['0', ...chain].join(',');
    if (dept.ancestors !== expected) {
      problems.push(`${dept.tenantId}:${dept.deptId} ancestors "${dept.ancestors}" != "${expected}"`);
    }
  }
  expect(problems).toEqual([]);
}

/**
 * The copy of the newest audit records (src/audit/audit.newest.ts): exactly
 * the 1,001 positioned records of audit_log with the highest positions (all
 * while there are fewer), every column alike.
 */
export async function expectNewestCopy(sql: Sql): Promise<void> {
  const columns = sql`position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, request_id, ip, changes`;
  const copy = await sql`SELECT ${columns} FROM audit_newest ORDER BY position DESC`;
  const newest = await sql`SELECT ${columns} FROM audit_log WHERE position IS NOT NULL ORDER BY position DESC LIMIT 1001`;
  expect(copy.length, 'rows of audit_newest').toBe(newest.length);
  expect(Array.from(copy)).toEqual(Array.from(newest));
}
