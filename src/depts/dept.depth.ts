import type { Tx } from '../db/database.js';
import { assert } from '../core/app.error.js';

/** docs/api-rules.md#departments: a top-level department is level 1; nothing goes deeper than this. */
const MAX_DEPT_DEPTH = 50;

/** The level of a department whose path is `ancestors` ("0" at the top: level 1). */
const levelOf = (ancestors: string) => ancestors.split(',').length;

/**
 * Rule: a create or move never puts any department below level 50. The
 * department lands one level under its parent (level 1 without one); for a
 * move the levels of its live subtree come along, so the deepest descendant
 * is measured by walking the subtree (children index, one statement).
 * Callers hold the moved subtree's locks (lockSubtree), so it cannot grow
 * meanwhile, and the new parent's share lock, so its level cannot change.
 */
export async function assertDepthFits(
  tx: Tx,
  tenantId: string,
  parent: { ancestors: string } | null,
  parentId: number,
  moved?: number,
): Promise<void> {
  const level = parent ? levelOf(parent.ancestors) + 1 : 1;
  let below = 0;
  if (moved !== undefined) {
    const [row] = await tx<{ below: number }[]>`
      WITH RECURSIVE subtree AS (
        SELECT dept_id, 1 AS depth FROM sys_dept WHERE tenant_id = ${tenantId} AND parent_id = ${moved} AND del_flag = '0'
        UNION ALL
        SELECT d.dept_id, s.depth + 1 FROM sys_dept d
        JOIN subtree s ON d.tenant_id = ${tenantId} AND d.parent_id = s.dept_id AND d.del_flag = '0'
      )
      SELECT coalesce(max(depth), 0)::int AS below FROM subtree`;
    below = row!.below;
  }
  const deepest = level + below;
  assert(
    deepest <= MAX_DEPT_DEPTH,
    409,
    moved === undefined
      ? `A department under ${parentId} would be at level ${deepest}; departments may be at most ${MAX_DEPT_DEPTH} levels deep`
      : `Moving department ${moved} under ${parentId} would put its subtree down to level ${deepest}; ` +
          `departments may be at most ${MAX_DEPT_DEPTH} levels deep`,
  );
}
