import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

// A RuoYi-Vue-Plus 5.x database to import from (docs/migrate-from-ruoyi.md), in a
// database of its own with a unique name, on MariaDB/MySQL or PostgreSQL:
// the six tables the import reads, with RuoYi 5.x's table and column names
// and types (snowflake BIGINT ids, DATETIME/timestamp without zone, CHAR(1)
// flags), written here from their column lists. Used by the import tests
// and `npm run bench -- ruoyi`.

const MYSQL_SERVER = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';

type Dialect = 'mysql' | 'postgres';
type Row = Record<string, unknown>;

/** Every column any of the rows names: a row without one inserts null there. */
const columnsOf = (rows: Row[]) => [...new Set(rows.flatMap((r) => Object.keys(r)))];

function ddl(dialect: Dialect): string[] {
  const my = dialect === 'mysql';
  const id = my ? 'bigint(20)' : 'int8';
  const int = my ? 'int(11)' : 'int4';
  const time = my ? 'datetime' : 'timestamp';
  const flag = my ? 'tinyint(1)' : 'int2';
  const audit = `create_dept ${id} default null, create_by ${id} default null, create_time ${time} default null,
    update_by ${id} default null, update_time ${time} default null`;
  return [
    `create table sys_tenant (
      id ${id} not null, tenant_id varchar(20) not null, contact_user_name varchar(20) default null,
      contact_phone varchar(20) default null, company_name varchar(30) default null, license_number varchar(30) default null,
      address varchar(200) default null, intro varchar(200) default null, domain varchar(200) default null,
      remark varchar(200) default null, package_id ${id} default null, expire_time ${time} default null,
      account_count ${int} default -1, status char(1) default '0', del_flag char(1) default '0', ${audit},
      primary key (id))`,
    `create table sys_tenant_package (
      package_id ${id} not null, package_name varchar(20) default null, menu_ids varchar(3000) default null,
      remark varchar(200) default null, menu_check_strictly ${flag} default 1, status char(1) default '0',
      del_flag char(1) default '0', ${audit}, primary key (package_id))`,
    `create table sys_dept (
      dept_id ${id} not null, tenant_id varchar(20) default '000000', parent_id ${id} default 0,
      ancestors varchar(500) default '', dept_name varchar(30) default '', dept_category varchar(100) default null,
      order_num ${int} default 0, leader ${id} default null, phone varchar(11) default null, email varchar(50) default null,
      status char(1) default '0', del_flag char(1) default '0', ${audit}, primary key (dept_id))`,
    `create table sys_user (
      user_id ${id} not null, tenant_id varchar(20) default '000000', dept_id ${id} default null,
      user_name varchar(30) not null, nick_name varchar(30) not null, user_type varchar(10) default 'sys_user',
      email varchar(50) default '', phonenumber varchar(11) default '', sex char(1) default '0', avatar ${id} default null,
      password varchar(100) default '', status char(1) default '0', del_flag char(1) default '0',
      login_ip varchar(128) default '', login_date ${time} default null, ${audit}, remark varchar(500) default null,
      primary key (user_id))`,
    `create table sys_role (
      role_id ${id} not null, tenant_id varchar(20) default '000000', role_name varchar(30) not null,
      role_key varchar(100) not null, role_sort ${int} not null, data_scope char(1) default '1',
      menu_check_strictly ${flag} default 1, dept_check_strictly ${flag} default 1, status char(1) not null,
      del_flag char(1) default '0', ${audit}, remark varchar(500) default null, primary key (role_id))`,
    `create table sys_user_role (user_id ${id} not null, role_id ${id} not null, primary key (user_id, role_id))`,
    `create table sys_post (
      post_id ${id} not null, tenant_id varchar(20) default '000000', dept_id ${id} not null, post_code varchar(64) not null,
      post_category varchar(100) default null, post_name varchar(50) not null, post_sort ${int} not null, status char(1) not null,
      ${audit}, remark varchar(500) default null, primary key (post_id))`,
  ];
}

export interface RuoyiSource {
  url: string;
  dialect: Dialect;
  insert(table: string, rows: Row[]): Promise<void>;
  /** One parameterised statement, `?` for each value. */
  exec(statement: string, values?: unknown[]): Promise<void>;
  dispose(): Promise<void>;
}

/** Whether a MySQL/MariaDB server answers at MYSQL_SERVER; the reason when not. */
export async function mysqlUnreachable(): Promise<string | undefined> {
  const mysql = await import('mysql2/promise');
  try {
    const c = await mysql.createConnection({ uri: MYSQL_SERVER, connectTimeout: 3000 });
    await c.end();
    return undefined;
  } catch (err) {
    return `no MySQL/MariaDB at ${MYSQL_SERVER} (${(err as Error).message}); set TEST_MYSQL_URL or start one`;
  }
}

async function mysqlSource(name: string): Promise<RuoyiSource> {
  const mysql = await import('mysql2/promise');
  const admin = await mysql.createConnection({ uri: MYSQL_SERVER });
  await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4`);
  const url = `${MYSQL_SERVER}/${name}`;
  const c = await mysql.createConnection({ uri: url, supportBigNumbers: true, bigNumberStrings: true });
  for (const statement of ddl('mysql')) await c.query(statement);
  return {
    url,
    dialect: 'mysql',
    async insert(table, rows) {
      for (let i = 0; i < rows.length; i += 5000) {
        const chunk = rows.slice(i, i + 5000);
        const columns = columnsOf(chunk);
        await c.query('INSERT INTO ?? (??) VALUES ?', [table, columns, chunk.map((r) => columns.map((k) => r[k] ?? null))]);
      }
    },
    async exec(statement, values = []) {
      await c.query(statement, values);
    },
    async dispose() {
      await c.end();
      await admin.query(`DROP DATABASE IF EXISTS ${name}`);
      await admin.end();
    },
  };
}

async function postgresSource(serverUrl: string, name: string): Promise<RuoyiSource> {
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const sql = postgres(url.toString(), { max: 2, onnotice: () => {} });
  for (const statement of ddl('postgres')) await sql.unsafe(statement);
  return {
    url: url.toString(),
    dialect: 'postgres',
    async insert(table, rows) {
      for (let i = 0; i < rows.length; i += 2000) {
        const chunk = rows.slice(i, i + 2000);
        await sql`INSERT INTO ${sql(table)} ${sql(chunk.map((r) => Object.fromEntries(columnsOf(chunk).map((k) => [k, r[k] ?? null]))) as never)}`;
      }
    },
    async exec(statement, values = []) {
      let n = 0;
      await sql.unsafe(
        statement.replace(/\?/g, () => `$${++n}`),
        values as never[],
      );
    },
    async dispose() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/** A new, empty RuoYi 5.x schema in a database of its own (`ruoyi_<hex>`), dropped by dispose(). */
export async function ruoyiSource(dialect: Dialect, postgresServer?: string): Promise<RuoyiSource> {
  // The name is ours (prefix + hex), never input.
  const name = `ruoyi_${randomBytes(6).toString('hex')}`;
  if (dialect === 'mysql') return mysqlSource(name);
  if (!postgresServer) throw new Error('a PostgreSQL source needs a server URL');
  return postgresSource(postgresServer, name);
}

export interface RuoyiRows {
  sys_tenant_package: Row[];
  sys_tenant: Row[];
  sys_dept: Row[];
  sys_user: Row[];
  sys_role: Row[];
  sys_user_role: Row[];
}

export async function load(source: RuoyiSource, rows: RuoyiRows): Promise<void> {
  for (const [table, list] of Object.entries(rows) as [string, Row[]][]) if (list.length > 0) await source.insert(table, list);
}
