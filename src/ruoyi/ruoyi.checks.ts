import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import { valueChecker } from '../core/value.check.js';
import { DEPT_FIELDS } from '../depts/dept.fields.js';
import { USER_FIELDS } from '../users/user.fields.js';
import { TENANT_FIELDS } from '../tenants/tenant.fields.js';
import { PACKAGE_FIELDS } from '../packages/package.fields.js';
import { propertiesOf } from '../db/fields.js';
import { PLATFORM, type Plan, type Planned, type Problem } from './ruoyi.plan.js';

// Rules of the source as a whole (docs/migrate-from-ruoyi.md#the-problems-report):
// values the API would refuse, judged by the API's own field schemas;
// duplicate live names where the service keeps them unique; people in
// departments that are not there; tenant codes that are not six digits.
// The tree's own rules (orphans, cycles, depth) are in ruoyi.tree.ts, the
// target's (ids it uses for something else) in ruoyi.target.ts.

function pick<F extends Record<string, { schema: unknown }>>(fields: F, names: (keyof F & string)[]): TObject {
  const all = propertiesOf(fields as never) as Record<string, TSchema>;
  return Type.Object(Object.fromEntries(names.map((name) => [name, all[name]!])));
}

const CHECKS = {
  dept: valueChecker(pick(DEPT_FIELDS, ['deptName', 'orderNum', 'leader', 'phone', 'email'])),
  user: valueChecker(pick(USER_FIELDS, ['userName', 'nickName', 'email', 'phonenumber'])),
  tenant: valueChecker(pick(TENANT_FIELDS, ['tenantId', 'companyName', 'tenantName', 'contactUserName', 'contactPhone', 'accountCount'])),
  package: valueChecker(pick(PACKAGE_FIELDS, ['packageName', 'remark'])),
};
const MENU_ID = /^[1-9][0-9]{0,18}$/;

const camel = (column: string) => column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

function checkValues<R extends object>(table: string, rows: Planned<R>[], check: ReturnType<typeof valueChecker>, problems: Problem[]) {
  const names = rows.length === 0 ? [] : Object.keys(rows[0]!.row).map((column) => [column, camel(column)] as const);
  for (const p of rows) {
    const values: Record<string, unknown> = {};
    for (const [column, name] of names) values[name] = (p.row as Record<string, unknown>)[column];
    const refused = check(values);
    if (refused !== undefined) problems.push({ table, id: p.sourceId, message: refused });
  }
}

/** Rule: among live rows keyed alike (one tenant's siblings, one tenant's user names), a name is used once. */
function checkUnique<R>(table: string, rows: Planned<R>[], keyOf: (row: R) => string | null, what: (row: R) => string, problems: Problem[]) {
  const seen = new Map<string, string>();
  for (const p of rows) {
    const key = keyOf(p.row);
    if (key === null) continue;
    const first = seen.get(key);
    if (first === undefined) seen.set(key, p.sourceId);
    else problems.push({ table, id: p.sourceId, message: `${what(p.row)} is already used by live ${table} ${first}` });
  }
}

export function checkPlan(plan: Plan): void {
  const problems = plan.problems;
  checkValues('sys_tenant_package', plan.packages, CHECKS.package, problems);
  for (const p of plan.packages) {
    const bad = p.row.menu_ids.split(',').find((id) => id !== '' && !MENU_ID.test(id));
    if (bad !== undefined) problems.push({ table: 'sys_tenant_package', id: p.sourceId, message: `menu_ids holds "${bad}", not a menu id` });
  }
  checkUnique(
    'sys_tenant_package',
    plan.packages,
    (r) => r.package_name,
    (r) => `package_name "${r.package_name}"`,
    problems,
  );

  checkValues('sys_tenant', plan.tenants, CHECKS.tenant, problems);
  for (const t of plan.tenants) {
    const { start_time: start, end_time: end } = t.row;
    if (start !== null && end !== null && start > end)
      problems.push({ table: 'sys_tenant', id: t.sourceId, message: `expire_time (${end}) is before create_time (${start})` });
  }
  checkUnique(
    'sys_tenant',
    plan.tenants,
    (r) => r.tenant_id,
    (r) => `tenant_id ${r.tenant_id}`,
    problems,
  );
  checkUnique(
    'sys_tenant',
    plan.tenants,
    (r) => (r.del_flag === '0' && r.tenant_id !== PLATFORM ? r.company_name : null),
    (r) => `company_name "${r.company_name}"`,
    problems,
  );
  if (!plan.tenants.some((t) => t.row.tenant_id === PLATFORM))
    problems.push({ table: 'sys_tenant', id: PLATFORM, message: 'the platform tenant 000000 is missing' });

  const tenants = new Set(plan.tenants.map((t) => t.row.tenant_id));
  const depts = new Map(plan.depts.map((d) => [`${d.row.tenant_id}/${d.row.dept_id}`, d.row]));
  for (const d of plan.depts) {
    if (!tenants.has(d.row.tenant_id)) problems.push({ table: 'sys_dept', id: d.sourceId, message: `tenant_id ${d.row.tenant_id} names no tenant` });
    const parent = depts.get(`${d.row.tenant_id}/${d.row.parent_id}`);
    if (d.row.del_flag === '0' && parent?.del_flag === '2')
      problems.push({ table: 'sys_dept', id: d.sourceId, message: `is live under the deleted department ${d.row.parent_id}` });
  }
  checkValues('sys_dept', plan.depts, CHECKS.dept, problems);
  checkUnique(
    'sys_dept',
    plan.depts,
    (r) => (r.del_flag === '0' ? `${r.tenant_id}/${r.parent_id}/${r.dept_name}` : null),
    (r) => `dept_name "${r.dept_name}" under ${r.parent_id}`,
    problems,
  );

  for (const u of plan.users) {
    const { tenant_id: tenantId, dept_id: deptId, del_flag: delFlag } = u.row;
    if (!tenants.has(tenantId)) problems.push({ table: 'sys_user', id: u.sourceId, message: `tenant_id ${tenantId} names no tenant` });
    if (deptId === null) continue;
    const dept = depts.get(`${tenantId}/${deptId}`);
    if (!dept) problems.push({ table: 'sys_user', id: u.sourceId, message: `dept_id ${deptId} names no department of tenant ${tenantId}` });
    else if (delFlag === '0' && dept.del_flag !== '0')
      problems.push({ table: 'sys_user', id: u.sourceId, message: `is live in the deleted department ${deptId}` });
  }
  checkValues('sys_user', plan.users, CHECKS.user, problems);
  checkUnique(
    'sys_user',
    plan.users,
    (r) => (r.del_flag === '0' ? `${r.tenant_id}/${r.user_name}` : null),
    (r) => `user_name "${r.user_name}" in tenant ${r.tenant_id}`,
    problems,
  );
}
