import type { DeptRow, Problem } from './ruoyi.plan.js';

/** The service's limit (src/depts/dept.depth.ts): a department at most 50 levels deep. */
const MAX_DEPTH = 50;

/**
 * Rule: each department's `ancestors` is recomputed from its parents, as
 * the service keeps it ('0' at the top, then the ids from the root down to
 * the parent). A parent missing from its tenant, a cycle, or a tree deeper
 * than the service allows is a problem; a stored path that disagrees is
 * mended and its department returned, to be reported as fixed.
 */
export function recomputeAncestors(rows: DeptRow[], problems: Problem[]): string[] {
  const byKey = new Map(rows.map((row) => [`${row.tenant_id}/${row.dept_id}`, row]));
  const path = new Map<DeptRow, string | null>();
  const problem = (row: DeptRow, message: string) => problems.push({ table: 'sys_dept', id: row.dept_id, message });

  const walk = (start: DeptRow): string | null => {
    // The chain up from `start` to a department whose path is known (or the top).
    const chain: DeptRow[] = [];
    const onChain = new Set<DeptRow>();
    let row: DeptRow | undefined = start;
    let base: string | null = null;
    while (row && !path.has(row)) {
      if (onChain.has(row)) {
        for (const member of chain.slice(chain.indexOf(row))) problem(member, `is its own ancestor (parent_id ${member.parent_id} leads back to it)`);
        for (const member of chain) path.set(member, null);
        return null;
      }
      chain.push(row);
      onChain.add(row);
      if (row.parent_id === '0') {
        base = '';
        row = undefined;
        break;
      }
      const parent = byKey.get(`${row.tenant_id}/${row.parent_id}`);
      if (!parent) {
        problem(row, `parent_id ${row.parent_id} names no department of tenant ${row.tenant_id}`);
        for (const member of chain) path.set(member, null);
        return null;
      }
      row = parent;
    }
    if (row) base = path.get(row) ?? null;
    if (row && base === null) {
      for (const member of chain) path.set(member, null);
      return null;
    }
    // Down the chain from the known end: each path is its parent's plus the parent's id.
    let above = row ? `${base},${row.dept_id}` : '0';
    for (let i = chain.length - 1; i >= 0; i--) {
      const member = chain[i]!;
      const own = i === chain.length - 1 && !row ? '0' : above;
      path.set(member, own);
      above = `${own},${member.dept_id}`;
    }
    return path.get(start) ?? null;
  };

  const fixed: string[] = [];
  for (const row of rows) {
    const computed = walk(row);
    if (computed === null) continue;
    if (computed.split(',').length > MAX_DEPTH) {
      problem(row, `is ${computed.split(',').length} levels deep; departments may be at most ${MAX_DEPTH} levels deep`);
      continue;
    }
    if (row.ancestors !== computed) fixed.push(row.dept_id);
    row.ancestors = computed;
  }
  return fixed;
}
