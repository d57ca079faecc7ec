import type { Tx } from '../db/database.js';
import { assert } from '../core/app.error.js';
import { idOrder, type Id } from '../core/ids.js';

// Which rows a department write locks, in which order, and why. The write
// paths (dept.sql.ts) take these locks inside the write's transaction; the
// rules (dept.rules.ts) then check what the locked rows say.
//
// Each rule locks the rows it reads, so a concurrent write that would change
// its answer waits for this transaction (or this one for it), and writes that
// do not touch the same rows never wait for each other:
// - the department being changed: FOR UPDATE (currentDept; for deletes,
//   assertAllLive in dept.rules.ts);
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

/**
 * The parent a department is to go under (null: the top, parentId 0),
 * share-locked until the commit: a delete, a disable or a move of it waits,
 * and if one committed first, the row read here is the version it left (no
 * longer live; a new path, which the child's then follows). Undefined when it
 * is not a live department of the tenant: see assertLiveParent.
 */
export async function lockParent(tx: Tx, tenantId: string, parentId: Id): Promise<Parent | null | undefined> {
  if (parentId === 0) return null;
  const [parent] = await tx<Parent[]>`
    SELECT ancestors, status FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ${parentId} AND del_flag = '0'
    FOR SHARE`;
  return parent;
}

/**
 * The live department a write is about to change, locked FOR UPDATE until the
 * commit, as the last write before this one left it (404 when there is none).
 */
async function currentDept(tx: Tx, tenantId: string, deptId: Id) {
  const [current] = await tx<{ parentId: Id; ancestors: string }[]>`
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
export async function lockDeptAndParent(tx: Tx, tenantId: string, deptId: Id, parentId: Id) {
  // Sent in the order they are started (one round trip); the server runs them one after another.
  const savepoint = tx`SAVEPOINT dept_locks`.execute();
  const parentFirst = idOrder(parentId, deptId) < 0 ? lockParent(tx, tenantId, parentId) : undefined;
  const current = currentDept(tx, tenantId, deptId);
  const [, locked, parent] = await Promise.all([savepoint, current, parentFirst ?? lockParent(tx, tenantId, parentId)]);
  return { current: locked, parent };
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

/** The rows of `ids` (a CTE of dept_id), each locked FOR UPDATE by an index probe of its own, in id order. */
const lockEach = (tx: Tx, tenantId: string, ids: ReturnType<Tx>) => tx`
  SELECT l.* FROM (SELECT dept_id FROM ${ids} ORDER BY dept_id) i
  CROSS JOIN LATERAL (
    SELECT d.dept_id, d.parent_id, d.ancestors, d.del_flag FROM sys_dept d
    WHERE d.tenant_id = ${tenantId} AND d.dept_id = i.dept_id
    FOR UPDATE
  ) l`;

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
export async function lockMove(tx: Tx, tenantId: string, deptId: Id, newParentId: Id): Promise<LockedMove> {
  let locked: string[] = [];
  /** The highest id locked so far (0: none); a pass takes no new row below it. */
  let highest: Id = 0;
  let restarts = 0;
  let restart = true;
  for (;;) {
    const release = restart ? tx`ROLLBACK TO SAVEPOINT dept_locks`.execute() : undefined;
    const query = tx<
      (MovedSubtree & {
        orderKept: boolean;
        fresh: string[];
        deptLive: boolean | null;
        deptParentId: Id | null;
        deptAncestors: string | null;
        parentAncestors: string | null;
        parentStatus: string | null;
      })[]
    >`
      WITH RECURSIVE subtree AS (
        SELECT dept_id, del_flag, 0 AS depth FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${deptId}
        UNION ALL
        SELECT d.dept_id, d.del_flag, s.depth + 1 FROM sys_dept d JOIN subtree s ON d.parent_id = s.dept_id WHERE d.tenant_id = ${tenantId}
      ), fresh AS MATERIALIZED (
        -- Rows of the subtree no earlier pass locked (the new parent, share-locked with them, aside).
        SELECT dept_id FROM subtree WHERE dept_id <> ${newParentId} AND dept_id NOT IN (SELECT unnest(${locked}::bigint[]))
      ), order_kept AS MATERIALIZED (
        SELECT count(*) = 0 AS kept FROM fresh WHERE dept_id < ${highest}
      ),
      -- The locks, in this order: the subtree's rows below the new parent's id, in id order; the new parent;
      -- the subtree's rows above it, in id order; none when order_kept is false. Each row is locked by an
      -- index probe of its own, one id after another (a LATERAL subquery with a locking clause is not merged
      -- into the join around it), so a pass costs what the subtree holds, not what the tenant holds (a hash
      -- join reads every department of the tenant; docs/benchmark.md). What must be locked first is
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
    const [, [pass]]: [unknown, Awaited<typeof query>] = await Promise.all([release, query]);
    const { orderKept, holdsNewParent, levelsBelow } = pass!;
    if (!orderKept) {
      restarts++;
      locked = [];
      highest = 0;
      restart = true;
      continue;
    }
    const current = pass!.deptLive ? { parentId: pass!.deptParentId!, ancestors: pass!.deptAncestors! } : undefined;
    const parent: Parent | null | undefined =
      newParentId === 0 ? null : pass!.parentAncestors === null ? undefined : { ancestors: pass!.parentAncestors, status: pass!.parentStatus! };
    // The rows this pass locked that no earlier one had, in id order (as text: ids may pass 2^53).
    const fresh: string[] = pass!.fresh.map(String);
    // Settled; or a rule already fails (the department or its new parent is gone), whatever the subtree holds.
    if (fresh.length === 0 || !current || parent === undefined) return { current, parent, holdsNewParent, levelsBelow };
    locked = locked.concat(fresh);
    // fresh is in id order; once restarts are used up, every new row is taken where it is (highest 0).
    const candidates: Id[] = [highest, fresh[fresh.length - 1]!, parent ? newParentId : 0];
    highest = restarts < MOVE_LOCK_RESTARTS ? candidates.sort(idOrder).at(-1)! : 0;
    restart = false;
  }
}
