import { canonicalId, withCanonicalIds, type Id } from '../core/ids.js';
import type { Db, Tx } from '../db/database.js';
import { contains } from '../db/sql.helpers.js';
import { assert } from '../core/app.error.js';
import { checkIfMatch } from '../core/version.js';
import { assertOwnTenant, type Actor } from '../identity/caller.js';
import { auditRecords, auditRecordsStatement, diffSql, recordedColumns, valuesSql } from '../audit/audit.record.js';
import { assertDepthFits } from './dept.depth.js';
import {
  assertAllLive,
  assertNoCycle,
  assertNoEnabledChild,
  assertNothingUnder,
  assertNotOwnParent,
  assertParentEnabled,
  assertLiveParent,
  deptPathUnder,
  rewriteSubtreePaths,
  trimmedName,
} from './dept.rules.js';
import { lockDeptAndParent, lockMove, lockParent, type MovedSubtree } from './dept.locks.js';
import type { Dept, DeptCreate, DeptListQuery, DeptUpdate } from './dept.schema.js';
import { DEPT_FIELDS } from './dept.fields.js';
import { PLAIN_COLUMNS, plainText, type PlainRow } from './dept.json.js';
import { fromRow, selectList, writeColumns } from '../db/fields.js';
import { chartBump, chartBumpStatement } from './dept.chart.js';
import { isOnCitus } from '../db/citus.js';

type DeptRow = Record<string, unknown>;

const COLUMNS = (sql: Db) => selectList(sql, 'sys_dept', DEPT_FIELDS);

/** What a department's audit record carries: every column of sys_dept (the API's fields and SCIM's external_id) but bookkeeping. */
const RECORDED = recordedColumns([...Object.values(DEPT_FIELDS).map((f) => f.column), 'external_id']);

const toDept = (row: DeptRow): Dept => fromRow(row, DEPT_FIELDS);

// ---------------------------------------------------------------- reads

export async function getDept(sql: Db, tenantId: string, deptId: Id): Promise<Dept | undefined> {
  const [row] = await sql<DeptRow[]>`
    SELECT ${COLUMNS(sql)} FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ${deptId} AND del_flag = '0'`;
  return row && toDept(row);
}

/**
 * The same department as getDept, as the JSON text GET answers: exactly
 * JSON.stringify of getDept's record, written from plain columns (plainText,
 * dept.json.ts) without building the record.
 */
export async function getDeptText(sql: Db, tenantId: string, deptId: Id): Promise<string | undefined> {
  const [row] = await sql<PlainRow[]>`
    SELECT ${PLAIN_COLUMNS(sql)} FROM sys_dept
    WHERE tenant_id = ${tenantId} AND dept_id = ${deptId} AND del_flag = '0'`;
  return row && `${plainText(row)}}`;
}

/**
 * The list filters (DeptListQuery) over sys_dept: the tenant's live rows, a
 * name containing deptName, a status, a parent. The chart's (dept.chart.ts);
 * the reference its test compares it with (tests/support/dept-reference.ts)
 * filters with it too, so both answer the same rows.
 */
export function listFilter(sql: Db, tenantId: string, query: DeptListQuery) {
  return sql`
    tenant_id = ${tenantId} AND del_flag = '0'
      ${query.deptName !== undefined ? sql`AND ${contains(sql, sql`dept_name`, query.deptName)}` : sql``}
      ${query.status !== undefined ? sql`AND status = ${query.status}` : sql``}
      ${query.parentId !== undefined ? sql`AND parent_id = ${canonicalId(query.parentId, 'parentId')}` : sql``}`;
}

/** The choices of a new parent for `deptId`: every live department but itself and its descendants. */
export async function listParentChoices(sql: Db, tenantId: string, deptId: Id): Promise<Dept[]> {
  assert(await getDept(sql, tenantId, deptId), 404, `Department ${deptId} not found`);
  const rows = await sql<DeptRow[]>`
    WITH RECURSIVE excluded AS (
      SELECT ${deptId}::bigint AS dept_id
      UNION
      SELECT d.dept_id FROM sys_dept d JOIN excluded e ON d.parent_id = e.dept_id WHERE d.tenant_id = ${tenantId}
    )
    SELECT ${COLUMNS(sql)} FROM sys_dept
    WHERE tenant_id = ${tenantId} AND del_flag = '0' AND dept_id NOT IN (SELECT dept_id FROM excluded)
    ORDER BY parent_id, order_num, dept_id`;
  return rows.map(toDept);
}

// ---------------------------------------------------------------- writes (each inside one transaction)

/**
 * `extra`: columns outside the REST department (SCIM's external_id, docs/scim.md#groups).
 * The row and its audit record go in with one statement.
 */
export async function createDept(tx: Tx, actor: Actor, sent: DeptCreate, extra: Record<string, unknown> = {}): Promise<Id> {
  const input = withCanonicalIds(sent, ['parentId']);
  assertOwnTenant(actor, input.tenantId, 'departments');
  const deptName = trimmedName(input.deptName);
  const parent = await lockParent(tx, actor.tenantId, input.parentId);
  assertLiveParent(parent, input.parentId);
  assertParentEnabled(parent, input.parentId, 'enable it before adding departments under it');
  assertDepthFits(parent, input.parentId);
  const columns = {
    ...writeColumns(DEPT_FIELDS, { ...input, deptName }),
    ...extra,
    tenant_id: actor.tenantId,
    ancestors: deptPathUnder(parent, input.parentId),
    create_by: actor.userName,
  };
  if (isOnCitus()) {
    // A statement per table, each routed to the tenant's shard: Citus runs the one-statement form below as
    // three, their rows kept on the coordinator in between, at a third of the speed (docs/scale-out.md#what-it-costs).
    // The record is built from the row as returned, typed again as a sys_dept row: the same values, big ids exact.
    const [made] = await tx<DeptRow[]>`INSERT INTO sys_dept ${tx(columns)} RETURNING *`;
    const created = tx`SELECT dept_id, ${valuesSql(tx, RECORDED, 'created')} FROM jsonb_populate_record(NULL::sys_dept, ${JSON.stringify(made)}::text::jsonb) created`;
    await tx`${auditRecordsStatement(tx, actor, 'dept.create', 'dept', created)}`;
    await tx`${chartBumpStatement(tx, actor.tenantId)}`;
    return made!.dept_id as Id;
  }
  const [row] = await tx<{ deptId: Id }[]>`
    WITH created AS (INSERT INTO sys_dept ${tx(columns)} RETURNING *)
    ${auditRecords(tx, actor, 'dept.create', 'dept', tx`SELECT dept_id, ${valuesSql(tx, RECORDED, 'created')} FROM created`)}
    ${chartBump(tx, actor.tenantId)}
    SELECT dept_id AS "deptId" FROM created`;
  return row!.deptId;
}

/**
 * Full replacement of one department. A changed parent is a move: the
 * subtree is locked, checked for cycles and depth, then its paths follow in
 * one statement. `extra` as for createDept.
 */
export async function updateDept(tx: Tx, actor: Actor, sent: DeptUpdate, ifMatch?: string, extra: Record<string, unknown> = {}): Promise<void> {
  const input = withCanonicalIds(sent, ['deptId', 'parentId']);
  assertOwnTenant(actor, input.tenantId, 'departments');
  const deptName = trimmedName(input.deptName);
  const { tenantId } = actor;
  const status = input.status ?? '0';
  // The department and the parent named, in id order; a move takes them again with its subtree (dept.locks.ts).
  let { current, parent } = await lockDeptAndParent(tx, tenantId, input.deptId, input.parentId);
  let subtree: MovedSubtree | undefined;
  if (current.parentId !== input.parentId && input.parentId !== input.deptId && parent !== undefined) {
    const move = await lockMove(tx, tenantId, input.deptId, input.parentId);
    assert(move.current, 404, `Department ${input.deptId} not found`);
    ({ current, parent } = { current: move.current, parent: move.parent });
    subtree = move;
  }
  await checkIfMatch(ifMatch, () => getDept(tx, tenantId, input.deptId), `Department ${input.deptId}`);

  assertNotOwnParent(input.deptId, input.parentId);
  assertLiveParent(parent, input.parentId);
  // Another write may have made the same move while this one waited for its locks.
  const moved = input.parentId !== current.parentId;
  if (moved) {
    assertNoCycle(input.deptId, input.parentId, subtree!);
    assertDepthFits(parent, input.parentId, { deptId: input.deptId, levelsBelow: subtree!.levelsBelow });
  }
  if (status === '0') assertParentEnabled(parent, input.parentId, 'a department under it cannot be enabled');
  else await assertNoEnabledChild(tx, tenantId, input.deptId);

  const ancestors = moved ? deptPathUnder(parent, input.parentId) : current.ancestors;
  // The department and its record (one, for the department itself): one statement; for a move, its subtree's paths next.
  await tx`
    WITH before AS MATERIALIZED (
      -- The row as the statement's snapshot has it: every part of one statement sees the same data, the UPDATE's effect not included.
      SELECT * FROM sys_dept WHERE tenant_id = ${tenantId} AND dept_id = ${input.deptId}
    ), updated AS (
      UPDATE sys_dept SET ${tx({ ...writeColumns(DEPT_FIELDS, { ...input, deptName }), ...extra, ancestors, update_by: actor.userName })},
        update_time = now()
      WHERE tenant_id = ${tenantId} AND dept_id = ${input.deptId}
      RETURNING *
    )
    ${auditRecords(tx, actor, moved ? 'dept.move' : 'dept.update', 'dept', tx`SELECT u.dept_id, ${diffSql(tx, RECORDED, 'b', 'u')} FROM updated u, before b`)}
    ${chartBump(tx, tenantId)}
    SELECT count(*) FROM updated`;
  if (moved) await rewriteSubtreePaths(tx, tenantId, input.deptId, current.ancestors, ancestors);
}

/**
 * Logical delete of one or many departments, all or nothing: every id must
 * be a live department of the caller's tenant (404 naming the missing ones)
 * and none may have a live child department or a live user (409 naming it).
 */
export async function deleteDepts(tx: Tx, actor: Actor, ids: Id[], ifMatch?: string): Promise<void> {
  const { tenantId } = actor;
  await assertAllLive(tx, tenantId, ids);
  await checkIfMatch(ifMatch, () => getDept(tx, tenantId, ids[0]!), `Department ${ids[0]}`);
  await assertNothingUnder(tx, tenantId, ids);
  await tx`
    WITH deleted AS (
      UPDATE sys_dept SET del_flag = '2', update_by = ${actor.userName}, update_time = now()
      WHERE tenant_id = ${tenantId} AND dept_id = ANY(${ids}::bigint[])
      RETURNING *
    ) ${auditRecords(tx, actor, 'dept.delete', 'dept', tx`SELECT dept_id, ${valuesSql(tx, RECORDED, 'deleted')} FROM deleted ORDER BY dept_id`)}
    ${chartBump(tx, tenantId)}
    SELECT count(*) FROM deleted`;
}
