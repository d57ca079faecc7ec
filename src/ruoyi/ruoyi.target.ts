import type { Db } from '../db/database.js';
import { acrossTenants } from '../db/citus.js';
import { digestOf, PLATFORM, type Kind, type Outcome, type Plan, type Planned, type Problem } from './ruoyi.plan.js';

// The plan against the target (docs/migrate-from-ruoyi.md#running-it-again): which
// rows are new, which changed in the source since the last run (their
// digest in ruoyi_import_row differs), which are as they were; and the ids
// and names the target already uses for something else. These reads cross
// tenants by design (docs/scale-out.md#across-tenants-by-design): the import
// looks at every tenant it writes.

type Row = Record<string, string>;
const key = (kind: Kind, tenantId: string, sourceId: string) => `${kind}/${tenantId}/${sourceId}`;

async function readTarget(db: Db, plan: Plan) {
  const codes = plan.tenants.map((t) => t.row.tenant_id);
  const deptIds = plan.depts.map((d) => d.row.dept_id);
  const userIds = plan.users.map((u) => u.row.user_id);
  return acrossTenants(db, async (q) => ({
    digests: await q<Row[]>`SELECT kind, tenant_id, source_id::text AS source_id, digest FROM ruoyi_import_row`,
    packages: await q<Row[]>`SELECT package_id::text AS id, package_name AS name, del_flag FROM sys_package`,
    tenants: await q<Row[]>`SELECT id::text AS id, tenant_id, company_name, del_flag FROM sys_tenant`,
    depts: await q<Row[]>`
      SELECT tenant_id, dept_id::text AS id, parent_id::text AS parent_id, dept_name, del_flag FROM sys_dept
      WHERE dept_id = ANY(${deptIds}::bigint[]) OR (tenant_id = ANY(${codes}::text[]) AND del_flag = '0')`,
    users: await q<Row[]>`
      SELECT tenant_id, user_id::text AS id, user_name, del_flag FROM sys_user
      WHERE user_id = ANY(${userIds}::bigint[]) OR (tenant_id = ANY(${codes}::text[]) AND del_flag = '0')`,
  }));
}

/** Rule: the platform's `admin` is RuoYi's `admin` of 000000: that source person is written onto our admin's row. */
function mapAdmin(plan: Plan, users: Row[]): void {
  const ours = users.find((u) => u.tenant_id === PLATFORM && u.user_name === 'admin' && u.del_flag === '0');
  const theirs = plan.users.find((u) => u.row.tenant_id === PLATFORM && u.row.user_name === 'admin' && u.row.del_flag === '0');
  if (!ours || !theirs || ours.id === theirs.row.user_id) return;
  theirs.row.user_id = ours.id!;
  theirs.row.role = 'superadmin';
  theirs.digest = digestOf(theirs.row);
}

function groupById(rows: Row[]): Map<string, Row[]> {
  const map = new Map<string, Row[]>();
  for (const row of rows) map.set(row.id!, [...(map.get(row.id!) ?? []), row]);
  return map;
}

/** Rule: a row of another tenant, or a live name held by a row the import does not write, is a problem; never overwritten. */
function checkCollisions(plan: Plan, target: Awaited<ReturnType<typeof readTarget>>, problems: Problem[]): void {
  const byId = <T extends Row>(rows: T[]) => new Map(rows.map((r) => [r.id!, r]));
  const tenantsById = byId(target.tenants);
  const tenantsByCode = new Map(target.tenants.map((t) => [t.tenant_id!, t]));
  for (const t of plan.tenants) {
    if (t.row.tenant_id === PLATFORM) continue;
    const sameId = tenantsById.get(t.row.id);
    const sameCode = tenantsByCode.get(t.row.tenant_id);
    if (sameId && sameId.tenant_id !== t.row.tenant_id)
      problems.push({ table: 'sys_tenant', id: t.sourceId, message: `id ${t.row.id} is the target's tenant ${sameId.tenant_id}` });
    if (sameCode && sameCode.id !== t.row.id)
      problems.push({ table: 'sys_tenant', id: t.sourceId, message: `tenant_id ${t.row.tenant_id} is the target's tenant with id ${sameCode.id}` });
    const sameName = target.tenants.find((o) => o.del_flag === '0' && o.company_name === t.row.company_name && o.tenant_id !== t.row.tenant_id);
    if (sameName && t.row.del_flag === '0' && !plan.tenants.some((p) => p.row.tenant_id === sameName.tenant_id))
      problems.push({
        table: 'sys_tenant',
        id: t.sourceId,
        message: `company_name "${t.row.company_name}" is the target's tenant ${sameName.tenant_id}`,
      });
  }
  const packageIds = new Set(plan.packages.map((p) => p.row.package_id));
  for (const p of plan.packages) {
    const other = target.packages.find((o) => o.del_flag === '0' && o.name === p.row.package_name && !packageIds.has(o.id!));
    if (other)
      problems.push({
        table: 'sys_tenant_package',
        id: p.sourceId,
        message: `package_name "${p.row.package_name}" is the target's package ${other.id}`,
      });
  }
  const written = (rows: Planned<{ tenant_id: string }>[], id: (r: never) => string) =>
    new Set(rows.map((r) => `${r.row.tenant_id}/${id(r.row as never)}`));
  const deptsWritten = written(plan.depts, (r: { dept_id: string }) => r.dept_id);
  const deptsById = groupById(target.depts);
  for (const d of plan.depts) {
    const other = deptsById.get(d.row.dept_id)?.find((o) => o.tenant_id !== d.row.tenant_id);
    if (other)
      problems.push({
        table: 'sys_dept',
        id: d.sourceId,
        message: `dept_id ${d.row.dept_id} is a department of the target's tenant ${other.tenant_id}`,
      });
  }
  const liveSiblings = new Map<string, Row>();
  for (const o of target.depts)
    if (o.del_flag === '0' && !deptsWritten.has(`${o.tenant_id}/${o.id}`)) liveSiblings.set(`${o.tenant_id}/${o.parent_id}/${o.dept_name}`, o);
  for (const d of plan.depts) {
    const other = d.row.del_flag === '0' ? liveSiblings.get(`${d.row.tenant_id}/${d.row.parent_id}/${d.row.dept_name}`) : undefined;
    if (other)
      problems.push({ table: 'sys_dept', id: d.sourceId, message: `dept_name "${d.row.dept_name}" is the target's live department ${other.id}` });
  }
  const usersWritten = written(plan.users, (r: { user_id: string }) => r.user_id);
  const targetOf = new Map<string, string>();
  const liveNames = new Map<string, Row>();
  for (const o of target.users)
    if (o.del_flag === '0' && !usersWritten.has(`${o.tenant_id}/${o.id}`)) liveNames.set(`${o.tenant_id}/${o.user_name}`, o);
  const usersById = groupById(target.users);
  for (const u of plan.users) {
    const other = usersById.get(u.row.user_id)?.find((o) => o.tenant_id !== u.row.tenant_id);
    if (other)
      problems.push({ table: 'sys_user', id: u.sourceId, message: `user_id ${u.row.user_id} is a user of the target's tenant ${other.tenant_id}` });
    const first = targetOf.get(`${u.row.tenant_id}/${u.row.user_id}`);
    if (first !== undefined)
      problems.push({ table: 'sys_user', id: u.sourceId, message: `would be written onto the same user as sys_user ${first}` });
    targetOf.set(`${u.row.tenant_id}/${u.row.user_id}`, u.sourceId);
    const named = u.row.del_flag === '0' ? liveNames.get(`${u.row.tenant_id}/${u.row.user_name}`) : undefined;
    if (named) problems.push({ table: 'sys_user', id: u.sourceId, message: `user_name "${u.row.user_name}" is the target's live user ${named.id}` });
  }
}

export interface Judged {
  outcomes: Map<Planned<object>, Outcome>;
  /** Source rows written before (by any earlier run), by kind/tenant/source id. */
  seen: Set<string>;
  /** Internal ids of the target's tenants by code, for the audit records. */
  tenantIds: Map<string, string>;
}

/** Checks the plan against the target and sorts every row into imported, updated or unchanged. */
export async function judgeAgainstTarget(db: Db, plan: Plan): Promise<Judged> {
  const target = await readTarget(db, plan);
  mapAdmin(plan, target.users);
  checkCollisions(plan, target, plan.problems);
  const digests = new Map(target.digests.map((d) => [key(d.kind as Kind, d.tenant_id!, d.source_id!), d.digest!]));
  const existing = new Set([
    ...target.packages.map((p) => key('package', PLATFORM, p.id!)),
    ...target.tenants.map((t) => key('tenant', t.tenant_id!, t.id!)),
    ...target.depts.map((d) => key('dept', d.tenant_id!, d.id!)),
    ...target.users.map((u) => key('user', u.tenant_id!, u.id!)),
  ]);
  const outcomes = new Map<Planned<object>, Outcome>();
  const all: Planned<object>[] = [...plan.packages, ...plan.tenants, ...plan.depts, ...plan.users];
  for (const p of all) {
    const before = digests.get(key(p.kind, p.tenantId, p.sourceId));
    const targetKey = key(p.kind, p.tenantId, p.kind === 'user' ? (p.row as { user_id: string }).user_id : p.sourceId);
    const there = existing.has(targetKey) || (p.kind === 'tenant' && p.tenantId === PLATFORM);
    outcomes.set(p, before === p.digest ? 'unchanged' : before !== undefined || there ? 'updated' : 'imported');
  }
  const tenantIds = new Map(target.tenants.map((t) => [t.tenant_id!, t.id!]));
  return { outcomes, seen: new Set(digests.keys()), tenantIds };
}
