import type { Source, SourceDept, SourceTenant, SourceUser } from './ruoyi.source.js';
import {
  dayOf,
  delFlagOf,
  optional,
  planned,
  PLATFORM,
  statusOf,
  type DeptRow,
  type Plan,
  type PackageRow,
  type Problem,
  type TenantRow,
  type UserRow,
} from './ruoyi.plan.js';
import { recomputeAncestors } from './ruoyi.tree.js';

// Each source row in the service's shape (docs/migrate-from-ruoyi.md#what-moves-where).
// Fields the service has no place for are counted in `dropped`; values it
// would refuse are problems (ruoyi.checks.ts), not mended here.

const BCRYPT = /^\$2[aby]\$[0-9]{2}\$[./A-Za-z0-9]{53}$/;
/** The stored hash of a person without a password the service can check (src/auth/password.ts NO_PASSWORD_HASH). */
const NO_PASSWORD = '!';

const RANK = { user: 0, admin: 1, superadmin: 2 } as const;
type Role = keyof typeof RANK;

function count(dropped: Record<string, number>, field: string, value: unknown): void {
  if (value !== null && value !== undefined && String(value).trim() !== '') dropped[field] = (dropped[field] ?? 0) + 1;
}

/** Menu ids as the service keeps them: "1,2,3", duplicates dropped; anything else is left for the checks to refuse. */
function menuList(raw: string | null): string {
  if (raw === null || raw.trim() === '') return '';
  return [...new Set(raw.split(',').map((part) => part.trim()))].join(',');
}

function mapPackages(source: Source, plan: Plan): Map<string, string> {
  const menus = new Map<string, string>();
  for (const p of source.packages) {
    if (delFlagOf(p.del_flag) !== '0') {
      plan.skipped.package++;
      continue;
    }
    const row: PackageRow = {
      package_id: p.package_id,
      package_name: (p.package_name ?? '').trim(),
      menu_ids: menuList(p.menu_ids),
      remark: optional(p.remark),
      status: statusOf(p.status),
      create_time: p.create_time,
      update_time: p.update_time,
    };
    menus.set(p.package_id, row.menu_ids);
    plan.packages.push(planned('package', PLATFORM, p.package_id, row));
  }
  return menus;
}

function tenantRow(t: SourceTenant, menus: Map<string, string>): TenantRow {
  const companyName = (t.company_name ?? '').trim();
  const packageId = optional(t.package_id);
  return {
    id: t.id,
    tenant_id: t.tenant_id,
    tenant_name: companyName,
    company_name: companyName,
    contact_user_name: (t.contact_user_name ?? '').trim(),
    contact_phone: (t.contact_phone ?? '').trim(),
    start_time: dayOf(t.create_time),
    end_time: dayOf(t.expire_time),
    status: statusOf(t.status),
    account_count: t.account_count ?? -1,
    menu_ids: packageId === null ? '' : (menus.get(packageId) ?? ''),
    package_id: packageId,
    del_flag: delFlagOf(t.del_flag),
    create_time: t.create_time,
    update_time: t.update_time,
  };
}

function mapTenants(source: Source, plan: Plan, menus: Map<string, string>): void {
  for (const t of source.tenants) {
    for (const field of ['license_number', 'address', 'intro', 'domain', 'remark'] as const) count(plan.dropped, `sys_tenant.${field}`, t[field]);
    const row = tenantRow(t, menus);
    if (row.package_id !== null && !menus.has(row.package_id)) {
      // A deleted tenant keeps no package that is gone; a live or disabled one must name a live one.
      if (row.del_flag !== '0') row.package_id = null;
      else plan.problems.push({ table: 'sys_tenant', id: t.id, message: `package_id ${row.package_id} names no live package` });
    }
    plan.tenants.push(planned('tenant', t.tenant_id, t.id, row));
  }
}

/** Users by id, for the names departments and bookkeeping refer to. */
function namesOf(users: SourceUser[]) {
  const byId = new Map(users.map((u) => [u.user_id, u]));
  return {
    nick: (id: string | null) => (id === null ? null : (byId.get(id)?.nick_name ?? undefined)),
    user: (id: string | null) => (id === null ? '' : (byId.get(id)?.user_name ?? '')),
  };
}

function mapDepts(source: Source, plan: Plan, names: ReturnType<typeof namesOf>): void {
  const rows: DeptRow[] = source.depts.map((d: SourceDept) => {
    count(plan.dropped, 'sys_dept.dept_category', d.dept_category);
    const leader = names.nick(optional(d.leader));
    if (leader === undefined) count(plan.dropped, 'sys_dept.leader (no such user)', d.leader);
    return {
      tenant_id: d.tenant_id,
      dept_id: d.dept_id,
      parent_id: optional(d.parent_id) ?? '0',
      ancestors: d.ancestors ?? '',
      dept_name: (d.dept_name ?? '').trim(),
      order_num: d.order_num ?? 0,
      leader: optional(leader ?? null),
      phone: optional(d.phone),
      email: optional(d.email),
      status: statusOf(d.status),
      del_flag: delFlagOf(d.del_flag),
      create_by: names.user(d.create_by),
      create_time: d.create_time,
      update_by: names.user(d.update_by),
      update_time: d.update_time,
    };
  });
  plan.fixedAncestors.push(...recomputeAncestors(rows, plan.problems));
  for (const row of rows) plan.depts.push(planned('dept', row.tenant_id, row.dept_id, row));
}

function roleOf(tenantId: string, keys: string[] | undefined): Role {
  let role: Role = 'user';
  for (const key of keys ?? []) {
    const mapped: Role = key === 'superadmin' ? (tenantId === PLATFORM ? 'superadmin' : 'admin') : key === 'admin' ? 'admin' : 'user';
    if (RANK[mapped] > RANK[role]) role = mapped;
  }
  return role;
}

function mapUsers(source: Source, plan: Plan, names: ReturnType<typeof namesOf>): void {
  const roles = new Map<string, string[]>();
  for (const r of source.userRoles) roles.set(r.user_id, [...(roles.get(r.user_id) ?? []), r.role_key]);
  for (const u of source.users) {
    count(plan.dropped, 'sys_user.sex', u.sex);
    count(plan.dropped, 'sys_user.avatar', u.avatar);
    const bcrypt = u.password !== null && BCRYPT.test(u.password);
    if (!bcrypt) count(plan.dropped, 'sys_user.password (not BCrypt)', u.password);
    const row: UserRow = {
      tenant_id: u.tenant_id,
      user_id: u.user_id,
      dept_id: optional(u.dept_id),
      user_name: (u.user_name ?? '').trim(),
      nick_name: (u.nick_name ?? '').trim(),
      email: optional(u.email),
      phonenumber: optional(u.phonenumber),
      status: statusOf(u.status),
      del_flag: delFlagOf(u.del_flag),
      role: roleOf(u.tenant_id, roles.get(u.user_id)),
      password_hash: bcrypt ? u.password! : NO_PASSWORD,
      create_by: names.user(u.create_by),
      create_time: u.create_time,
      update_by: names.user(u.update_by),
      update_time: u.update_time,
    };
    plan.users.push(planned('user', row.tenant_id, row.user_id, row));
  }
}

/** The plan of a source, before it is checked against the target. */
export function mapSource(source: Source, extraProblems: Problem[] = []): Plan {
  const plan: Plan = {
    packages: [],
    tenants: [],
    depts: [],
    users: [],
    skipped: { package: 0, tenant: 0, dept: 0, user: 0 },
    dropped: {},
    fixedAncestors: [],
    problems: [...extraProblems],
  };
  for (const [table, rows] of Object.entries(source.unkept)) if (rows > 0) plan.dropped[`${table} (rows)`] = rows;
  const menus = mapPackages(source, plan);
  mapTenants(source, plan, menus);
  const names = namesOf(source.users);
  mapDepts(source, plan, names);
  mapUsers(source, plan, names);
  return plan;
}
