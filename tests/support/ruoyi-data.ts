import bcrypt from 'bcryptjs';
import type { RuoyiRows } from './ruoyi-source.js';

// Rows of a RuoYi-Vue-Plus 5.x back office: the platform tenant 000000 as
// RuoYi's own seed has it (admin, its superadmin role, a small chart, ''
// e-mails), and `tenants` generated tenants on a package, each with a tree
// of `depts` departments (ten children a node), `users` people (the first
// the tenant's admin), some disabled, some deleted. Ids are RuoYi-like:
// snowflake-sized for tenants and packages, within 2^53-1 for departments
// and people unless `bigIds`.

export const ADMIN_PASSWORD = 'admin123';
export const PEOPLE_PASSWORD = 'people-pw-1';
/** RuoYi's own seed hash of admin123, a $2a$ hash as its BCryptPasswordEncoder writes. */
const RUOYI_ADMIN_HASH = '$2a$10$7JB720yubVSZvUI0rEqK/.VqGOZTH.ulu33dHOiBE8ByOhJIrdAu2';

export const PLATFORM_PACKAGE = '1780000000000000001';
const tenantCode = (t: number) => String(100000 + t);
export const tenantIdOf = (t: number) => String(1790000000000000000n + BigInt(t));

export interface SeedOptions {
  tenants: number;
  depts: number;
  users: number;
  /** Department and user ids beyond 2^53-1, as RuoYi's snowflakes are. */
  bigIds?: boolean;
}

const at = (day: string) => new Date(`${day}T09:30:00`);

export function deptIdOf(t: number, j: number, big = false): string {
  return String((big ? 1800000000000000000n : 10_000_000n) + BigInt(t) * 1_000_000n + BigInt(j));
}
export function userIdOf(t: number, k: number, big = false): string {
  return String((big ? 1810000000000000000n : 20_000_000n) + BigInt(t) * 1_000_000n + BigInt(k));
}

function platformRows(): RuoyiRows {
  const dept = (id: number, parent: number, ancestors: string, name: string, leader: number | null) => ({
    dept_id: id,
    tenant_id: '000000',
    parent_id: parent,
    ancestors,
    dept_name: name,
    order_num: id - 100,
    leader,
    phone: '15888888888',
    email: 'xxx@qq.com',
    status: '0',
    del_flag: '0',
    create_by: 1,
    create_time: at('2024-01-01'),
  });
  const user = (id: number, dept: number, name: string, nick: string, hash: string, email: string) => ({
    user_id: id,
    tenant_id: '000000',
    dept_id: dept,
    user_name: name,
    nick_name: nick,
    email,
    phonenumber: '15888888888',
    sex: '1',
    password: hash,
    status: '0',
    del_flag: '0',
    create_by: 1,
    create_time: at('2024-01-01'),
  });
  return {
    sys_tenant_package: [
      { package_id: PLATFORM_PACKAGE, package_name: 'Standard', menu_ids: '1,2,3,100', remark: 'the usual menus', status: '0', del_flag: '0' },
      { package_id: '1780000000000000002', package_name: 'Retired', menu_ids: '1', status: '0', del_flag: '1' },
    ],
    sys_tenant: [
      {
        id: 1,
        tenant_id: '000000',
        contact_user_name: '疯狂的狮子Li',
        contact_phone: '15888888888',
        company_name: 'XXX有限公司',
        license_number: '9100000000000',
        address: 'Somewhere',
        intro: 'The platform',
        domain: null,
        remark: null,
        package_id: null,
        expire_time: null,
        account_count: -1,
        status: '0',
        del_flag: '0',
        create_time: at('2024-01-01'),
      },
    ],
    sys_role: [
      { role_id: 1, tenant_id: '000000', role_name: '超级管理员', role_key: 'superadmin', role_sort: 1, status: '0', del_flag: '0' },
      { role_id: 3, tenant_id: '000000', role_name: '本部门及以下', role_key: 'test1', role_sort: 3, status: '0', del_flag: '0' },
      { role_id: 4, tenant_id: '000000', role_name: 'Gone', role_key: 'admin', role_sort: 4, status: '0', del_flag: '1' },
    ],
    sys_dept: [
      dept(100, 0, '0', 'XXX科技', 1),
      dept(101, 100, '0,100', '深圳总公司', null),
      dept(102, 100, '0,100', '长沙分公司', null),
      dept(103, 101, '0,100,101', '研发部门', 1),
      dept(104, 101, '0,100,101', '市场部门', 3),
    ],
    sys_user: [
      user(1, 103, 'admin', '疯狂的狮子Li', RUOYI_ADMIN_HASH, 'crazyLionLi@163.com'),
      user(3, 104, 'test', '本部门及以下 密码666666', bcrypt.hashSync('666666', 4), ''),
      user(4, 102, 'test1', '仅本人 密码666666', bcrypt.hashSync('666666', 4), ''),
    ],
    sys_user_role: [
      { user_id: 1, role_id: 1 },
      { user_id: 3, role_id: 3 },
      { user_id: 4, role_id: 4 },
    ],
  };
}

/** The rows of a RuoYi back office: the platform as seeded, plus the generated tenants. */
export function ruoyiRows(options: SeedOptions): RuoyiRows {
  const rows = platformRows();
  const hash = bcrypt.hashSync(PEOPLE_PASSWORD, 4);
  for (let t = 1; t <= options.tenants; t++) {
    const code = tenantCode(t);
    rows.sys_tenant.push({
      id: tenantIdOf(t),
      tenant_id: code,
      contact_user_name: `Contact ${t}`,
      contact_phone: `1390000${String(t).padStart(4, '0')}`,
      company_name: `Company ${t}`,
      license_number: null,
      address: `Street ${t}`,
      intro: null,
      domain: `t${t}.example.com`,
      remark: `tenant ${t}`,
      package_id: PLATFORM_PACKAGE,
      expire_time: at('2099-12-31'),
      account_count: -1,
      status: '0',
      del_flag: '0',
      create_by: 1,
      create_time: at('2024-02-01'),
    });
    const roleId = String(5_000_000 + t);
    rows.sys_role.push({ role_id: roleId, tenant_id: code, role_name: '管理员', role_key: 'admin', role_sort: 1, status: '0', del_flag: '0' });
    const ancestors: string[] = [];
    for (let j = 0; j < options.depts; j++) {
      const id = deptIdOf(t, j, options.bigIds);
      const parent = j === 0 ? '0' : deptIdOf(t, Math.floor((j - 1) / 10), options.bigIds);
      ancestors[j] = j === 0 ? '0' : `${ancestors[Math.floor((j - 1) / 10)]},${parent}`;
      rows.sys_dept.push({
        dept_id: id,
        tenant_id: code,
        parent_id: parent,
        ancestors: ancestors[j],
        dept_name: j === 0 ? `Company ${t}` : `Dept ${j}`,
        dept_category: j % 3 === 0 ? 'C' : null,
        order_num: j % 7,
        leader: userIdOf(t, j % Math.max(1, options.users), options.bigIds),
        phone: j % 2 === 0 ? '' : '13800000000',
        email: '',
        status: '0',
        del_flag: '0',
        create_by: userIdOf(t, 0, options.bigIds),
        create_time: at('2024-03-01'),
        update_by: null,
        update_time: null,
      });
    }
    for (let k = 0; k < options.users; k++) {
      const id = userIdOf(t, k, options.bigIds);
      rows.sys_user.push({
        user_id: id,
        tenant_id: code,
        dept_id: deptIdOf(t, k % options.depts, options.bigIds),
        user_name: k === 0 ? 'admin' : `u${k}`,
        nick_name: `Person ${t}-${k}`,
        email: k % 4 === 0 ? '' : `p${k}@t${t}.example.com`,
        phonenumber: k % 5 === 0 ? '' : '13900000000',
        sex: String(k % 2),
        avatar: null,
        password: hash,
        status: k > 0 && k % 50 === 0 ? '1' : '0',
        del_flag: k > 0 && k % 97 === 0 ? '1' : '0',
        create_by: userIdOf(t, 0, options.bigIds),
        create_time: at('2024-03-02'),
      });
      if (k === 0) rows.sys_user_role.push({ user_id: id, role_id: roleId });
    }
  }
  return rows;
}
