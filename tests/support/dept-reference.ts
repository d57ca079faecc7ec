import type { Db } from '../../src/db/database.js';
import { fromRow, selectList } from '../../src/db/fields.js';
import { DEPT_FIELDS } from '../../src/depts/dept.fields.js';
import type { Dept, DeptListQuery, DeptNode } from '../../src/depts/dept.schema.js';
import { listFilter } from '../../src/depts/dept.sql.js';

// The department chart as the routes answered it before the chart was built
// into bytes (src/depts/dept.chart.ts): records read whole and nested in
// JavaScript. tests/dept.chart.test.ts compares the chart's bytes with these,
// serialised.

/** Live departments, filtered (the chart's own filter, listFilter), in display order (parentId, orderNum, deptId). */
export async function listDepts(sql: Db, tenantId: string, query: DeptListQuery): Promise<Dept[]> {
  const rows = await sql<Record<string, unknown>[]>`
    SELECT ${selectList(sql, 'sys_dept', DEPT_FIELDS)} FROM sys_dept WHERE ${listFilter(sql, tenantId, query)}
    ORDER BY parent_id, order_num, dept_id`;
  return rows.map((row) => fromRow(row, DEPT_FIELDS));
}

/** Nests a list ordered by parentId, orderNum, deptId; a node whose parent is not in the list is a root. */
export function toTree(depts: Dept[]): DeptNode[] {
  const nodes = new Map<number | string, DeptNode>();
  for (const dept of depts) nodes.set(dept.deptId, { ...dept, children: [] });
  const roots: DeptNode[] = [];
  for (const node of nodes.values()) {
    const parent = nodes.get(node.parentId);
    (parent ? parent.children : roots).push(node);
  }
  return roots;
}
