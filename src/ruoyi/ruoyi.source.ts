import postgres from 'postgres';

// Reading a RuoYi-Vue-Plus 5.x database (docs/migrate-from-ruoyi.md): its tenants,
// packages, departments, users and their roles, whole, over `mysql://`
// (MySQL, MariaDB) or `postgres://`. Ids come back as decimal text whatever
// their size (RuoYi's snowflakes pass 2^53-1); times without a zone
// (MySQL DATETIME, PostgreSQL timestamp) as wall-clock times of the process
// time zone (TZ), as the service reads its own.

type Text = string | null;
type Time = Date | null;

interface SourcePackage {
  package_id: string;
  package_name: Text;
  menu_ids: Text;
  remark: Text;
  status: Text;
  del_flag: Text;
  create_time: Time;
  update_time: Time;
}

export interface SourceTenant {
  id: string;
  tenant_id: string;
  contact_user_name: Text;
  contact_phone: Text;
  company_name: Text;
  license_number: Text;
  address: Text;
  intro: Text;
  domain: Text;
  remark: Text;
  package_id: Text;
  expire_time: Time;
  account_count: number | null;
  status: Text;
  del_flag: Text;
  create_time: Time;
  update_time: Time;
}

/** RuoYi's bookkeeping columns, on departments and people alike. */
interface Kept {
  status: Text;
  del_flag: Text;
  create_by: Text;
  create_time: Time;
  update_by: Text;
  update_time: Time;
}

export interface SourceDept extends Kept {
  dept_id: string;
  tenant_id: string;
  parent_id: Text;
  ancestors: Text;
  dept_name: Text;
  dept_category: Text;
  order_num: number | null;
  leader: Text;
  phone: Text;
  email: Text;
}

export interface SourceUser extends Kept {
  user_id: string;
  tenant_id: string;
  dept_id: Text;
  user_name: Text;
  nick_name: Text;
  email: Text;
  phonenumber: Text;
  sex: Text;
  avatar: Text;
  password: Text;
}

/** One live role of a user: sys_user_role joined to a live sys_role. */
interface SourceUserRole {
  user_id: string;
  role_key: string;
}

export interface Source {
  /** Rows of RuoYi's tables the service has no place for (menus, posts, data-scope rules), by table; absent tables left out. */
  unkept: Record<string, number>;
  packages: SourcePackage[];
  tenants: SourceTenant[];
  depts: SourceDept[];
  users: SourceUser[];
  userRoles: SourceUserRole[];
}

const ID = (column: string, text: string) => `CAST(${column} AS ${text})`;

/** The statements, the same on both dialects but for the type ids are cast to (`text`: CHAR or TEXT). */
function statements(text: string) {
  const id = (column: string) => `${ID(column, text)} AS ${column.split('.').pop()!}`;
  const audit = `${ID('create_by', text)} AS create_by, create_time, ${ID('update_by', text)} AS update_by, update_time`;
  return {
    packages: `SELECT ${id('package_id')}, package_name, menu_ids, remark, status, del_flag, create_time, update_time
      FROM sys_tenant_package ORDER BY package_id`,
    tenants: `SELECT ${id('id')}, tenant_id, contact_user_name, contact_phone, company_name, license_number, address, intro,
        domain, remark, ${id('package_id')}, expire_time, account_count, status, del_flag, create_time, update_time
      FROM sys_tenant ORDER BY id`,
    depts: `SELECT ${id('dept_id')}, tenant_id, ${id('parent_id')}, ancestors, dept_name, dept_category, order_num,
        ${id('leader')}, phone, email, status, del_flag, ${audit}
      FROM sys_dept ORDER BY dept_id`,
    users: `SELECT ${id('user_id')}, tenant_id, ${id('dept_id')}, user_name, nick_name, email, phonenumber, sex,
        ${id('avatar')}, password, status, del_flag, ${audit}
      FROM sys_user ORDER BY user_id`,
    userRoles: `SELECT ${id('ur.user_id')}, r.role_key AS role_key
      FROM sys_user_role ur JOIN sys_role r ON r.role_id = ur.role_id
      WHERE r.del_flag = '0' ORDER BY ur.user_id`,
  };
}

type Step = (table: string, rows: number) => void;
type Statements = ReturnType<typeof statements>;

/** RuoYi's tables of what the service does not keep: only counted. Constant names, never input. */
const UNKEPT = ['sys_menu', 'sys_role_menu', 'sys_post', 'sys_user_post', 'sys_role_dept'] as const;

/** Every table through one dialect's `query`, in order, `step` told of each. */
async function readAll(q: Statements, query: (text: string) => Promise<unknown[]>, step: Step): Promise<Source> {
  const unkept: Record<string, number> = {};
  for (const table of UNKEPT) {
    // A source without the table (a trimmed schema) has nothing of it to count.
    const rows = await query(`SELECT count(*) AS n FROM ${table}`).catch(() => undefined);
    if (rows) unkept[table] = Number((rows[0] as { n: number | string }).n);
  }
  const read = async <T>(table: keyof Statements): Promise<T[]> => {
    const rows = (await query(q[table])) as T[];
    step(table, rows.length);
    return rows;
  };
  return {
    unkept,
    packages: await read('packages'),
    tenants: await read('tenants'),
    depts: await read('depts'),
    users: await read('users'),
    userRoles: await read('userRoles'),
  };
}

async function readPostgres(url: string, step: Step): Promise<Source> {
  // One connection; int8 stays text (the driver's default), timestamps are read as local times.
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    return await readAll(statements('text'), async (text) => [...(await sql.unsafe(text))], step);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

async function readMysql(url: string, step: Step): Promise<Source> {
  const mysql = await import('mysql2/promise');
  // DATETIME as the process's local time (timezone 'local'); BIGINT as text.
  const connection = await mysql.createConnection({
    uri: url,
    supportBigNumbers: true,
    bigNumberStrings: true,
    timezone: 'local',
    connectTimeout: 10_000,
  });
  try {
    return await readAll(statements('CHAR'), async (text) => (await connection.query(text))[0] as unknown[], step);
  } finally {
    await connection.end();
  }
}

/** The dialect a source URL names, or undefined when it names none we read. */
export function dialectOf(url: string): 'mysql' | 'postgres' | undefined {
  const scheme = /^([a-z]+):\/\//i.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'mysql' || scheme === 'mariadb') return 'mysql';
  if (scheme === 'postgres' || scheme === 'postgresql') return 'postgres';
  return undefined;
}

/** Reads the whole source; `step` hears of each table read. */
export async function readSource(url: string, step: Step): Promise<Source> {
  const dialect = dialectOf(url);
  if (dialect === 'postgres') return readPostgres(url, step);
  return readMysql(url.replace(/^mariadb:/i, 'mysql:'), step);
}
