import type { Tx } from '../db/database.js';
import { assert } from '../core/app.error.js';
import { NAME_MAX } from '../core/limits.js';

// The department rules (docs/api-rules.md#departments), one function each,
// with the SQL that checks it. The writes in dept.sql.ts are lists of these
// calls inside the write's transaction.
//
// Each rule locks the rows it reads, so a concurrent write that would change
// its answer waits for this transaction (or this one for it), and writes that
// do not touch the same rows never wait for each other:
// - the department being changed: FOR UPDATE (currentDept, assertAllLive);
// - the parent a department goes under: FOR SHARE (lockParent), so it is not
//   deleted, disabled or moved (its path is the child's) until the commit;
// - a moved subtree: FOR UPDATE, every row of it (lockMove);
// - sibling names: the unique index sys_dept_sibling_name_key.
//
// Every write takes its department locks in ascending dept_id order, and
// never waits for a department below one it already holds:
// - a create: its parent, one row (lockParent);
// - a delete: its departments, in one statement in id order (assertAllLive);
// - an update: the department and the parent named, in id order
//   (lockDeptAndParent); when that parent is a new one, those two locks are
//   let go and the move takes its whole subtree and the new parent in one
//   statement in id order (lockMove).
// So department writes queue for each other but never wait in a circle, and
// none is a deadlock's victim. That matters beyond the retry: PostgreSQL only
// looks for a deadlock after deadlock_timeout (1 s by default), every write
// queued behind the circle waits that long too, and a victim run again can
// meet the same circle. When moves locked their department and new parent
// before their subtree, storms of crossing moves chained such waits past the
// statement and request deadlines (503). transaction() still runs a
// deadlock's victim again, for the case lockMove leaves open.

/** The parent a department hangs under: what its path and the enabled rule need. */
export interface Parent {
  ancestors: string;
  status: string;
}

/** Rule: deptName is trimmed and 1 to NAME_MAX characters (not UTF-16 units: an emoji counts once, as in varchar). */
export function trimmedName(name: string): string {
  const trimmed = name.trim();
  const length = [...trimmed].length;
  assert(length >= 1 && length <= NAME_MAX, 400, `deptName must be 1 to ${NAME_MAX} characters after trimming`);
  return trimmed;
}

/**
 * The parent a department is to go under (null: the top, parentId 0),
 * share-locked until the commit: a delete, a disable or a move of it waits,
 * and if one committed first, the row read here is the version it left (no
 * longer live; a new path, which the child's then follows). Undefined when it
 * is not a live department of the tenant: see assertLiveParent.
 */
export async function lockParent(tx: Tx, tenantId: string, parentId: number): Promise<Parent | null | undefined> {
  if (parentId === 0) return null;
  const [parent] = await tx<Parent[]>`
    SELECT ancestors, status FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ${parentId} AND del_flag = '0'
    FOR SHARE`;
  return parent;
}

/** Rule: parentId is 0 (the top) or a live department of the caller's tenant (400 otherwise). */
export function assertLiveParent(parent: Parent | null | undefined, parentId: number): asserts parent is Parent | null {
  assert(parent !== undefined, 400, `parentId ${parentId} is not a live department of your tenant`);
}

/** RuoYi's path: "0" at the top, else the parent's path followed by the parent's id. */
export const pathUnder = (parent: Parent | null, parentId: number) => (parent ? `${parent.ancestors},${parentId}` : '0');

/** Rule: nothing is created or enabled under a disabled parent. */
export function assertParentEnabled(parent: Parent | null, parentId: number, refused: string): void {
  assert(!parent || parent.status === '0', 409, `Parent department ${parentId} is disabled; ${refused}`);
}

/**
 * The live department a write is about to change, locked FOR UPDATE until the
 * commit, as the last write before this one left it (404 when there is none).
 */
async function currentDept(tx: Tx, tenantId: string, deptId: number) {
  const [current] = await tx<{ parentId: number; ancestors: string }[]>`
    SELECT parent_id AS "parentId", ancestors FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ${deptId} AND del_flag = '0'
    FOR UPDATE`;
  assert(current, 404, `Department ${deptId} not found`);
  return current;
}

/** The department an update changes, as its lock found it. */
type CurrentDept = Awaited<ReturnType<typeof currentDept>>;

/**
 * An update's first locks, all it needs when its department stays under its
 * parent: the department (currentDept) and the parent named (lockParent), in
 * id order, sent together. They come after a savepoint: when the department
 * turns out to be moving, lockMove lets go of both (rolls back to it) and
 * takes them again in order with the subtree, which may hold lower ids.
 */
export async function lockDeptAndParent(tx: Tx, tenantId: string, deptId: number, parentId: number) {
  // Sent in the order they are started (one round trip); the server runs them one after another.
  const savepoint = tx`SAVEPOINT dept_locks`.execute();
  const parentFirst = parentId < deptId ? lockParent(tx, tenantId, parentId) : undefined;
  const current = currentDept(tx, tenantId, deptId);
  const [, locked, parent] = await Promise.all([savepoint, current, parentFirst ?? lockParent(tx, tenantId, parentId)]);
  return { current: locked, parent };
}

/** Rule (moves): a department is never its own parent. */
export function assertNotOwnParent(deptId: number, parentId: number): void {
  assert(parentId !== deptId, 409, `Department ${deptId} cannot be its own parent`);
}

/** What the walk of a moved subtree found, once the subtree was all locked. */
export interface MovedSubtree {
  /** The new parent is in the subtree (the department itself or one of its descendants). */
  holdsNewParent: boolean;
  /** Levels of live departments below the moved one (0: none). */
  levelsBelow: number;
}

/** A move's rows, all locked: the department (undefined: not live), its new parent (as lockParent answers) and its subtree. */
export interface LockedMove extends MovedSubtree {
  current: CurrentDept | undefined;
  parent: Parent | null | undefined;
}

/**
 * Times a move lets go of its locks and takes them again in order (see
 * lockMove) before it takes the rows that joined its subtree where they are:
 * each restart follows another write's commit into the subtree, so they are
 * few, but a subtree that keeps growing must not keep a move waiting. Past
 * this, a deadlock is possible again, and transaction() retries it.
 */
const MOVE_LOCK_RESTARTS = 5;

/**
 * Moves, after lockDeptAndParent: the moved department's whole subtree
 * (deleted rows too, whose paths the rewrite keeps right as well) locked FOR
 * UPDATE until the commit, so no department is created in it, or moved into
 * or out of it, while its paths are rewritten; and the new parent FOR SHARE,
 * as lockParent takes it. Creates share-lock their parent, so one made under
 * the subtree while it is being locked is either waited for, and then
 * committed before the next pass, or waits for the move and then reads its
 * parent's new path.
 *
 * The locks lockDeptAndParent took are let go first (rollback to its
 * savepoint), and each pass takes the subtree's rows and the new parent in
 * one statement in id order: the rows below the parent's id, then the parent,
 * then the rows above it. Each pass walks the subtree afresh (a recursive CTE
 * down the children index); the passes end when one finds no row an earlier
 * pass had not locked: nobody else can then add to the subtree or take from
 * it, and that last walk answers two rules exactly:
 * - cycles: a department never goes under one of its own descendants
 *   (assertNoCycle), i.e. the new parent is not in the walk;
 * - depth: how far the subtree reaches below the department (assertDepthFits).
 * A later pass finds new rows when the subtree grew while a pass waited for a
 * lock: a create's row (a new, higher id) or a subtree moved in (any ids). A
 * new row above every lock held is taken in order; one below would mean
 * waiting for it while holding higher ones, the circle every other write
 * avoids, so the pass locks nothing and the move lets go of all its locks
 * and starts over with a first pass, at most MOVE_LOCK_RESTARTS times.
 */
/** The rows of `ids` (a CTE of dept_id), each locked FOR UPDATE by an index probe of its own, in id order. */
const lockEach = (tx: Tx, tenantId: string, ids: ReturnType<Tx>) => tx`
  SELECT l.* FROM (SELECT dept_id FROM ${ids} ORDER BY dept_id) i
  CROSS JOIN LATERAL (
    SELECT d.dept_id, d.parent_id, d.ancestors, d.del_flag FROM sys_dept d
    WHERE d.tenant_id = ${tenantId} AND d.dept_id = i.dept_id
    FOR UPDATE
  ) l`;

export async function lockMove(tx: Tx, tenantId: string, deptId: number, newParentId: number): Promise<LockedMove> {
  let locked: number[] = [];
  /** The highest id locked so far (0: none); a pass takes no new row below it. */
  let highest = 0;
  let restarts = 0;
  let restart = true;
  for (;;) {
    const release = restart ? tx`ROLLBACK TO SAVEPOINT dept_locks`.execute() : undefined;
    const query = tx<
      (MovedSubtree & {
        orderKept: boolean;
        fresh: string[];
        deptLive: boolean | null;
        deptParentId: number | null;
        deptAncestors: string | null;
        parentAncestors: string | null;
        parentStatus: string | null;
      })[]
    >`
      WITH RECURSIVE subtree AS (
        SELECT dept_id, del_flag, 0 AS depth FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${deptId}
        UNION ALL
        SELECT d.dept_id, d.del_flag, s.depth + 1 FROM sys_dept d JOIN subtree s ON d.tenant_id = ${tenantId} AND d.parent_id = s.dept_id
      ), fresh AS MATERIALIZED (
        -- Rows of the subtree no earlier pass locked (the new parent, share-locked with them, aside).
        SELECT dept_id FROM subtree WHERE dept_id <> ${newParentId} AND dept_id NOT IN (SELECT unnest(${locked}::bigint[]))
      ), order_kept AS MATERIALIZED (
        SELECT count(*) = 0 AS kept FROM fresh WHERE dept_id < ${highest}
      ),
      -- The locks, in this order: the subtree's rows below the new parent's id, in id order; the new parent;
      -- the subtree's rows above it, in id order; none when order_kept is false. Each row is locked by an
      -- index probe of its own, one id after another (a LATERAL subquery with a locking clause is not merged
      -- into the join around it), so a pass costs what the subtree holds, not what the tenant holds: a hash
      -- join read every department of the tenant to lock a subtree of 31. What must be locked first is
      -- joined into the ids a scan reads: a sort gives its first row only once it has read all of them, a
      -- count once it has counted all. (A scalar subquery in a WHERE would be an InitPlan, whose result the
      -- tenant-filter check cannot tell from a parameter.)
      ids_below AS MATERIALIZED (
        SELECT s.dept_id FROM subtree s, order_kept o WHERE s.dept_id < ${newParentId} AND o.kept
      ), below AS MATERIALIZED (${lockEach(tx, tenantId, tx`ids_below`)}), parent AS MATERIALIZED (
        SELECT d.ancestors, d.status FROM sys_dept d, (SELECT count(*) FROM below) b
        WHERE d.tenant_id = ${tenantId} AND d.dept_id = ${newParentId} AND d.del_flag = '0'
        FOR SHARE OF d
      ), ids_above AS MATERIALIZED (
        SELECT s.dept_id FROM subtree s, order_kept o, (SELECT count(*) FROM parent) p WHERE s.dept_id > ${newParentId} AND o.kept
      ), above AS MATERIALIZED (${lockEach(tx, tenantId, tx`ids_above`)})
      SELECT o.kept AS "orderKept", f.fresh, x.del_flag = '0' AS "deptLive", x.parent_id AS "deptParentId", x.ancestors AS "deptAncestors",
        p.ancestors AS "parentAncestors", p.status AS "parentStatus", w."holdsNewParent", w."levelsBelow"
      FROM order_kept o
      -- Reads all of above, so every lock is taken.
      CROSS JOIN (SELECT count(*) FROM above) a
      CROSS JOIN (SELECT coalesce(array_agg(dept_id ORDER BY dept_id), '{}') AS fresh FROM fresh) f
      CROSS JOIN (
        SELECT coalesce(bool_or(dept_id = ${newParentId}), false) AS "holdsNewParent",
          coalesce(max(depth) FILTER (WHERE del_flag = '0'), 0)::int AS "levelsBelow"
        FROM subtree
      ) w
      -- The department as its lock found it (the latest version, should it have waited).
      LEFT JOIN (SELECT * FROM below WHERE dept_id = ${deptId} UNION ALL SELECT * FROM above WHERE dept_id = ${deptId}) x ON true
      LEFT JOIN parent p ON true`;
    const [, [pass]] = await Promise.all([release, query]);
    const { orderKept, holdsNewParent, levelsBelow } = pass!;
    if (!orderKept) {
      restarts++;
      locked = [];
      highest = 0;
      restart = true;
      continue;
    }
    const current = pass!.deptLive ? { parentId: pass!.deptParentId!, ancestors: pass!.deptAncestors! } : undefined;
    const parent =
      newParentId === 0 ? null : pass!.parentAncestors === null ? undefined : { ancestors: pass!.parentAncestors, status: pass!.parentStatus! };
    // The rows this pass locked that no earlier one had, in id order.
    const fresh = pass!.fresh.map(Number);
    // Settled; or a rule already fails (the department or its new parent is gone), whatever the subtree holds.
    if (fresh.length === 0 || !current || parent === undefined) return { current, parent, holdsNewParent, levelsBelow };
    locked = locked.concat(fresh);
    // fresh is in id order; once restarts are used up, every new row is taken where it is (highest 0).
    highest = restarts < MOVE_LOCK_RESTARTS ? Math.max(highest, fresh[fresh.length - 1]!, parent ? newParentId : 0) : 0;
    restart = false;
  }
}

/** Rule (moves): a department never goes under one of its own descendants, which would close a cycle. */
export function assertNoCycle(deptId: number, parentId: number, subtree: MovedSubtree): void {
  assert(!subtree.holdsNewParent, 409, `Cannot move department ${deptId} under ${parentId}: ${parentId} is one of its descendants`);
}

/** Rule: a department with an enabled child cannot be disabled; the child is named. */
export async function assertNoEnabledChild(tx: Tx, tenantId: string, deptId: number): Promise<void> {
  const [child] = await tx<{ deptId: number; deptName: string }[]>`
    SELECT dept_id AS "deptId", dept_name AS "deptName" FROM sys_dept
    WHERE tenant_id = ${tenantId} AND parent_id = ${deptId} AND del_flag = '0' AND status = '0'
    LIMIT 1`;
  assert(!child, 409, `Department ${deptId} has enabled child department "${child?.deptName}" (${child?.deptId}); disable it first`);
}

/**
 * Moves: every descendant's path starts with the department's old path plus
 * its id; one data-modifying CTE (`rewritten`) swaps that prefix for the new
 * one across the whole subtree, whatever its size, in the statement that
 * updates the department itself (the statement must open with WITH RECURSIVE).
 */
export function subtreePathsRewrite(tx: Tx, tenantId: string, deptId: number, oldAncestors: string, newAncestors: string) {
  const oldPrefix = `${oldAncestors},${deptId}`;
  const newPrefix = `${newAncestors},${deptId}`;
  return tx`, descendants AS (
      SELECT dept_id FROM sys_dept WHERE tenant_id = ${tenantId} AND parent_id = ${deptId}
      UNION ALL
      SELECT d.dept_id FROM sys_dept d JOIN descendants s ON d.tenant_id = ${tenantId} AND d.parent_id = s.dept_id
    ), rewritten AS (
      UPDATE sys_dept d
      SET ancestors = ${newPrefix} || substr(d.ancestors, ${oldPrefix.length + 1})
      FROM descendants s
      WHERE d.tenant_id = ${tenantId} AND d.dept_id = s.dept_id
    )`;
}

/**
 * Rule (deletes): every id is a live department of the tenant; 404 names the
 * missing ones. The live ones are locked FOR UPDATE (in id order, so two
 * overlapping batch deletes queue rather than deadlock): a create or a user
 * placed under one of them is then either committed, and seen by
 * assertNothingUnder, or waits and finds its parent deleted.
 */
export async function assertAllLive(tx: Tx, tenantId: string, ids: number[]): Promise<void> {
  const found = await tx<{ deptId: number }[]>`
    SELECT dept_id AS "deptId" FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ANY(${ids}::bigint[]) AND del_flag = '0'
    ORDER BY dept_id
    FOR UPDATE`;
  const live = new Set(found.map((r) => r.deptId));
  const missing = ids.filter((id) => !live.has(id));
  assert(missing.length === 0, 404, `Department(s) not found: ${missing.slice(0, 20).join(', ')}`);
}

/** Rule (deletes): no target has a live child department or a live user; the first one found is named. */
export async function assertNothingUnder(tx: Tx, tenantId: string, ids: number[]): Promise<void> {
  const [blocked] = await tx<{ deptId: number; deptName: string; hasChild: boolean }[]>`
    SELECT p.dept_id AS "deptId", p.dept_name AS "deptName",
           EXISTS (SELECT 1 FROM sys_dept c WHERE c.tenant_id = ${tenantId} AND c.parent_id = p.dept_id AND c.del_flag = '0') AS "hasChild"
    FROM sys_dept p
    WHERE p.tenant_id = ${tenantId} AND p.dept_id = ANY(${ids}::bigint[])
      AND (EXISTS (SELECT 1 FROM sys_dept c WHERE c.tenant_id = ${tenantId} AND c.parent_id = p.dept_id AND c.del_flag = '0')
        OR EXISTS (SELECT 1 FROM sys_user u WHERE u.tenant_id = ${tenantId} AND u.dept_id = p.dept_id AND u.del_flag = '0'))
    ORDER BY p.dept_id LIMIT 1`;
  assert(
    !blocked,
    409,
    `Department "${blocked?.deptName}" (${blocked?.deptId}) has ${blocked?.hasChild ? 'child departments' : 'users'}; ` +
      `${blocked?.hasChild ? 'delete or move them' : 'move or delete them'} first`,
  );
}
