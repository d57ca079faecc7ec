import type { Id } from '../core/ids.js';
import { assert } from '../core/app.error.js';

/** docs/api-rules.md#departments: a top-level department is level 1; nothing goes deeper than this. */
const MAX_DEPT_DEPTH = 50;

/** The level of a department whose path is `ancestors` ("0" at the top: level 1). */
const levelOf = (ancestors: string) => ancestors.split(',').length;

/**
 * Rule: a create or move never puts any department below level 50. The
 * department lands one level under its parent (level 1 without one); for a
 * move the levels of its live subtree come along (`levelsBelow`, from the
 * walk that locked the subtree: lockMove in dept.locks.ts). The parent's
 * share lock keeps its level still, the subtree's locks keep it from growing.
 */
export function assertDepthFits(parent: { ancestors: string } | null, parentId: Id, moved?: { deptId: Id; levelsBelow: number }): void {
  const level = parent ? levelOf(parent.ancestors) + 1 : 1;
  const deepest = level + (moved?.levelsBelow ?? 0);
  assert(
    deepest <= MAX_DEPT_DEPTH,
    409,
    moved === undefined
      ? `A department under ${parentId} would be at level ${deepest}; departments may be at most ${MAX_DEPT_DEPTH} levels deep`
      : `Moving department ${moved.deptId} under ${parentId} would put its subtree down to level ${deepest}; ` +
          `departments may be at most ${MAX_DEPT_DEPTH} levels deep`,
  );
}
