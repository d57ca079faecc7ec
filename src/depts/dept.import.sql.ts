import type { Id } from '../core/ids.js';
import type { Db, Tx } from '../db/database.js';
import type { Actor } from '../identity/caller.js';
import { AppError } from '../core/app.error.js';
import { recordAudit } from '../audit/audit.record.js';
import { chartBump } from './dept.chart.js';
import type { FileRow } from './dept.file.js';
import { planChartImport, type ChartRow } from './dept.import.plan.js';

// The chart as a file, read and written (docs/api-rules.md#a-chart-as-a-file):
// the export's rows, and an import's reads, checks and set-based writes, in
// the caller's one transaction, every statement naming the tenant.

const COLUMNS = (db: Db) => db`
  dept_id AS "deptId", parent_id AS "parentId", dept_name AS "deptName", order_num AS "orderNum",
  leader, phone, email, status, ancestors`;

/** The tenant's live departments, parents before children, siblings in their order. */
export async function exportRows(sql: Db, tenantId: string): Promise<ChartRow[]> {
  return sql<ChartRow[]>`
    SELECT ${COLUMNS(sql)} FROM sys_dept
    WHERE tenant_id = ${tenantId} AND del_flag = '0'
    ORDER BY array_length(string_to_array(ancestors, ','), 1), parent_id, order_num, dept_id`;
}

export interface ImportCounts {
  created: number;
  updated: number;
  unchanged: number;
}

const time = () => new Date().toISOString();

async function insertRows(tx: Tx, actor: Actor, rows: ChartRow[]): Promise<void> {
  if (rows.length === 0) return;
  const c = <K extends keyof ChartRow>(k: K) => rows.map((r) => r[k]);
  await tx`
    WITH created AS (
      INSERT INTO sys_dept (tenant_id, dept_id, parent_id, ancestors, dept_name, order_num, leader, phone, email, status, create_by)
      OVERRIDING SYSTEM VALUE
      SELECT ${actor.tenantId}, d.id, d.parent, d.ancestors, d.name, d.ord, d.leader, d.phone, d.email, d.status, ${actor.userName}
      FROM unnest(${c('deptId')}::bigint[], ${c('parentId')}::bigint[], ${c('ancestors')}::text[], ${c('deptName')}::text[],
                  ${c('orderNum')}::int[], ${c('leader')}::text[], ${c('phone')}::text[], ${c('email')}::text[], ${c('status')}::text[])
           AS d(id, parent, ancestors, name, ord, leader, phone, email, status)
      RETURNING 1) ${chartBump(tx, actor.tenantId)}
    SELECT count(*) FROM created`;
}

async function updateRows(tx: Tx, actor: Actor, rows: ChartRow[]): Promise<void> {
  if (rows.length === 0) return;
  const c = <K extends keyof ChartRow>(k: K) => rows.map((r) => r[k]);
  await tx`
    WITH updated AS (
      UPDATE sys_dept s SET parent_id = d.parent, ancestors = d.ancestors, dept_name = d.name, order_num = d.ord,
        leader = d.leader, phone = d.phone, email = d.email, status = d.status, update_by = ${actor.userName},
        update_time = ${time()}::timestamptz
      FROM unnest(${c('deptId')}::bigint[], ${c('parentId')}::bigint[], ${c('ancestors')}::text[], ${c('deptName')}::text[],
                  ${c('orderNum')}::int[], ${c('leader')}::text[], ${c('phone')}::text[], ${c('email')}::text[], ${c('status')}::text[])
           AS d(id, parent, ancestors, name, ord, leader, phone, email, status)
      WHERE s.tenant_id = ${actor.tenantId} AND s.dept_id = d.id AND s.del_flag = '0'
      RETURNING 1) ${chartBump(tx, actor.tenantId)}
    SELECT count(*) FROM updated`;
}

/**
 * Applies a chart file to the caller's tenant, all or nothing: every
 * department of the tenant is locked, the file checked as a whole (each
 * problem by line, one 400 naming them all), then the new departments
 * inserted and the changed ones updated, with one `dept.import` record.
 * A file that changes nothing writes and records nothing.
 */
export async function importChart(tx: Tx, actor: Actor, file: FileRow[]): Promise<ImportCounts> {
  await tx`SELECT 1 FROM sys_dept WHERE tenant_id = ${actor.tenantId} FOR UPDATE`;
  const current = await tx<ChartRow[]>`SELECT ${COLUMNS(tx)} FROM sys_dept WHERE tenant_id = ${actor.tenantId} AND del_flag = '0'`;
  const wanted = file.filter((row) => (row.cells.deptId ?? '') === '').length;
  const ids =
    wanted === 0
      ? []
      : await tx<{ id: Id }[]>`SELECT nextval(pg_get_serial_sequence('sys_dept', 'dept_id')) AS id FROM generate_series(1, ${wanted})`;
  const plan = planChartImport(
    current,
    file,
    ids.map((r) => r.id),
  );
  if (plan.problems.length > 0) {
    const shown = plan.problems.slice(0, 100).join('; ');
    const more = plan.problems.length > 100 ? `; and ${plan.problems.length - 100} more` : '';
    throw new AppError(400, `The file was refused, nothing was written: ${plan.problems.length} problem(s): ${shown}${more}`);
  }
  const counts = { created: plan.creates.length, updated: plan.updates.length, unchanged: plan.unchanged };
  if (plan.creates.length === 0 && plan.updates.length === 0) return counts;
  await insertRows(tx, actor, plan.creates);
  await updateRows(tx, actor, plan.updates);
  await recordAudit(tx, actor, [{ action: 'dept.import', entityType: 'dept', entityId: '', changes: { ...counts, rows: file.length } }]);
  return counts;
}
