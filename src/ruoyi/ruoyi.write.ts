import type { Tx } from '../db/database.js';
import { chartBump } from '../depts/dept.chart.js';
import { keepNameGrams } from '../tenants/tenant.grams.js';
import { bumpTenantListVersion } from '../identity/tenant.version.js';
import { PLATFORM, type DeptRow, type PackageRow, type Planned, type TenantRow, type UserRow } from './ruoyi.plan.js';

// The import's writes (docs/migrate-from-ruoyi.md): set-based, one statement per
// kind and tenant whatever the number of rows (arrays unnested), each naming
// the tenant it writes (docs/scale-out.md), all in the caller's one
// transaction. Upserts by id: a row new to the target is inserted with its
// source id, a row already there takes the source's values.

const time = (value: Date | null) => (value === null ? null : value.toISOString());

/**
 * The transaction's now(), as a value for the upserts' DO UPDATE SET: Citus
 * takes no function but an IMMUTABLE one there (now() is STABLE). Read once
 * per transaction (the writes run per tenant and kind), it is the time now()
 * gives in that transaction.
 */
const times = new WeakMap<Tx, Promise<string>>();
function transactionTime(tx: Tx): Promise<string> {
  let time = times.get(tx);
  if (!time) times.set(tx, (time = tx<{ now: string }[]>`SELECT now()::text AS now`.then(([row]) => row!.now)));
  return time;
}
function columns<R extends object>(rows: R[]) {
  return <K extends keyof R>(column: K) =>
    rows.map((row) => (row[column] instanceof Date || row[column] === null ? time(row[column] as Date | null) : row[column]));
}

export async function writePackages(tx: Tx, rows: PackageRow[]): Promise<void> {
  if (rows.length === 0) return;
  const c = columns(rows);
  const at = await transactionTime(tx);
  // In a WITH, as every upsert here: Citus plans a value in an INSERT's DO UPDATE SET only there.
  await tx`
    WITH written AS (
    INSERT INTO sys_package (package_id, package_name, menu_ids, remark, status, create_by, create_time, update_by, update_time)
    SELECT p.id, p.name, p.menus, p.remark, p.status, 'import-ruoyi', COALESCE(p.created, now()), 'import-ruoyi', p.updated
    FROM unnest(${c('package_id')}::bigint[], ${c('package_name')}::text[], ${c('menu_ids')}::text[], ${c('remark')}::text[],
                ${c('status')}::text[], ${c('create_time')}::timestamptz[], ${c('update_time')}::timestamptz[])
         AS p(id, name, menus, remark, status, created, updated)
    ON CONFLICT (package_id) DO UPDATE SET package_name = excluded.package_name, menu_ids = excluded.menu_ids,
      remark = excluded.remark, status = excluded.status, del_flag = '0', update_by = excluded.update_by, update_time = ${at}::timestamptz
    RETURNING 1)
    SELECT count(*) FROM written`;
}

/**
 * Tenants: RuoYi's 000000 merged onto the platform tenant (its names and
 * contact; our id, lineage and settings stay), the others upserted by id as
 * children of the platform. Their name trigrams and the tenant rows'
 * version are kept as every tenant write keeps them.
 */
export async function writeTenants(tx: Tx, rows: TenantRow[]): Promise<void> {
  if (rows.length === 0) return;
  const platform = rows.find((r) => r.tenant_id === PLATFORM);
  const children = rows.filter((r) => r.tenant_id !== PLATFORM);
  if (platform) {
    const [row] = await tx<{ id: string }[]>`
      UPDATE sys_tenant SET tenant_name = ${platform.tenant_name}, company_name = ${platform.company_name},
        contact_user_name = ${platform.contact_user_name}, contact_phone = ${platform.contact_phone},
        update_by = 'import-ruoyi', update_time = now()
      WHERE tenant_id = ${PLATFORM} RETURNING id::text AS id`;
    await keepNameGrams(tx, row!.id, platform.tenant_name, true);
  }
  if (children.length > 0) {
    const c = columns(children);
    const at = await transactionTime(tx);
    const written = await tx<{ id: string; name: string }[]>`
      WITH written AS (
      INSERT INTO sys_tenant (id, tenant_id, tenant_parent, ancestors, tenant_name, company_name, contact_user_name, contact_phone,
        start_time, end_time, status, account_count, menu_ids, package_id, del_flag, create_by, create_time, update_by, update_time)
      SELECT t.id, t.code, ${PLATFORM}, ${PLATFORM}, t.name, t.company, t.contact, t.phone, t.start_day, t.end_day, t.status,
             t.accounts, t.menus, t.package, t.del, 'import-ruoyi', COALESCE(t.created, now()), 'import-ruoyi', t.updated
      FROM unnest(${c('id')}::bigint[], ${c('tenant_id')}::text[], ${c('tenant_name')}::text[], ${c('company_name')}::text[],
                  ${c('contact_user_name')}::text[], ${c('contact_phone')}::text[], ${c('start_time')}::date[], ${c('end_time')}::date[],
                  ${c('status')}::text[], ${c('account_count')}::int[], ${c('menu_ids')}::text[], ${c('package_id')}::bigint[],
                  ${c('del_flag')}::text[], ${c('create_time')}::timestamptz[], ${c('update_time')}::timestamptz[])
           AS t(id, code, name, company, contact, phone, start_day, end_day, status, accounts, menus, package, del, created, updated)
      ON CONFLICT (id) DO UPDATE SET tenant_name = excluded.tenant_name, company_name = excluded.company_name,
        contact_user_name = excluded.contact_user_name, contact_phone = excluded.contact_phone, start_time = excluded.start_time,
        end_time = excluded.end_time, status = excluded.status, account_count = excluded.account_count, menu_ids = excluded.menu_ids,
        package_id = excluded.package_id, del_flag = excluded.del_flag, update_by = excluded.update_by, update_time = ${at}::timestamptz
      RETURNING id::text AS id, tenant_name AS name)
      SELECT id, name FROM written`;
    for (const t of written) await keepNameGrams(tx, t.id, t.name, true);
  }
  await bumpTenantListVersion(tx);
}

/** One tenant's departments, in one statement with its chart's version moved on (src/depts/dept.chart.ts). */
export async function writeDepts(tx: Tx, tenantId: string, rows: DeptRow[]): Promise<void> {
  if (rows.length === 0) return;
  const c = columns(rows);
  const at = await transactionTime(tx);
  await tx`
    WITH written AS (
      INSERT INTO sys_dept (tenant_id, dept_id, parent_id, ancestors, dept_name, order_num, leader, phone, email, status, del_flag,
        create_by, create_time, update_by, update_time)
      OVERRIDING SYSTEM VALUE
      SELECT ${tenantId}, d.id, d.parent, d.ancestors, d.name, d.ord, d.leader, d.phone, d.email, d.status, d.del,
             d.created_by, COALESCE(d.created, now()), d.updated_by, d.updated
      FROM unnest(${c('dept_id')}::bigint[], ${c('parent_id')}::bigint[], ${c('ancestors')}::text[], ${c('dept_name')}::text[],
                  ${c('order_num')}::int[], ${c('leader')}::text[], ${c('phone')}::text[], ${c('email')}::text[], ${c('status')}::text[],
                  ${c('del_flag')}::text[], ${c('create_by')}::text[], ${c('create_time')}::timestamptz[], ${c('update_by')}::text[],
                  ${c('update_time')}::timestamptz[])
           AS d(id, parent, ancestors, name, ord, leader, phone, email, status, del, created_by, created, updated_by, updated)
      ON CONFLICT (tenant_id, dept_id) DO UPDATE SET parent_id = excluded.parent_id, ancestors = excluded.ancestors,
        dept_name = excluded.dept_name, order_num = excluded.order_num, leader = excluded.leader, phone = excluded.phone,
        email = excluded.email, status = excluded.status, del_flag = excluded.del_flag, create_by = excluded.create_by,
        create_time = excluded.create_time, update_by = excluded.update_by,
        update_time = COALESCE(excluded.update_time, ${at}::timestamptz)
      RETURNING 1) ${chartBump(tx, tenantId)}
    SELECT count(*) FROM written`;
}

/**
 * One tenant's users. A person's BCrypt hash is written when the person is
 * new to the target (`fresh`), and afterwards only while the target still
 * holds a BCrypt hash: a password set or first used in the service since
 * (then an scrypt hash) is kept.
 */
export async function writeUsers(tx: Tx, tenantId: string, rows: UserRow[], fresh: boolean): Promise<void> {
  if (rows.length === 0) return;
  const c = columns(rows);
  const at = await transactionTime(tx);
  const password = fresh
    ? tx`excluded.password_hash`
    : tx`CASE WHEN sys_user.password_hash LIKE '$2%' OR sys_user.password_hash = '!' THEN excluded.password_hash ELSE sys_user.password_hash END`;
  await tx`
    WITH written AS (
    INSERT INTO sys_user (tenant_id, user_id, dept_id, user_name, nick_name, email, phonenumber, status, del_flag, role, password_hash,
      create_by, create_time, update_by, update_time)
    OVERRIDING SYSTEM VALUE
    SELECT ${tenantId}, u.id, u.dept, u.name, u.nick, u.email, u.phone, u.status, u.del, u.role, u.hash,
           u.created_by, COALESCE(u.created, now()), u.updated_by, u.updated
    FROM unnest(${c('user_id')}::bigint[], ${c('dept_id')}::bigint[], ${c('user_name')}::text[], ${c('nick_name')}::text[],
                ${c('email')}::text[], ${c('phonenumber')}::text[], ${c('status')}::text[], ${c('del_flag')}::text[], ${c('role')}::text[],
                ${c('password_hash')}::text[], ${c('create_by')}::text[], ${c('create_time')}::timestamptz[], ${c('update_by')}::text[],
                ${c('update_time')}::timestamptz[])
         AS u(id, dept, name, nick, email, phone, status, del, role, hash, created_by, created, updated_by, updated)
    ON CONFLICT (tenant_id, user_id) DO UPDATE SET dept_id = excluded.dept_id, user_name = excluded.user_name,
      nick_name = excluded.nick_name, email = excluded.email, phonenumber = excluded.phonenumber, status = excluded.status,
      del_flag = excluded.del_flag, role = excluded.role, password_hash = ${password}, create_by = excluded.create_by,
      create_time = excluded.create_time, update_by = excluded.update_by,
      update_time = COALESCE(excluded.update_time, ${at}::timestamptz)
    RETURNING 1)
    SELECT count(*) FROM written`;
}

/** The digests of the rows one tenant's import wrote (ruoyi.target.ts reads them on the next run). */
export async function writeDigests(tx: Tx, tenantId: string, rows: Planned<object>[]): Promise<void> {
  if (rows.length === 0) return;
  await tx`
    INSERT INTO ruoyi_import_row (tenant_id, kind, source_id, digest)
    SELECT ${tenantId}, r.kind, r.id, r.digest
    FROM unnest(${rows.map((r) => r.kind)}::text[], ${rows.map((r) => r.sourceId)}::bigint[], ${rows.map((r) => r.digest)}::text[]) AS r(kind, id, digest)
    ON CONFLICT (tenant_id, kind, source_id) DO UPDATE SET digest = excluded.digest`;
}

/**
 * Rule: the ids and codes the service hands out itself never meet imported
 * ones. The department and user sequences move past the largest imported id
 * within 2^53-1 (larger ones are beyond their MAXVALUE, sql/025_ruoyi_import.sql);
 * the tenant code sequence past the largest imported code.
 */
export async function moveSequences(tx: Tx, dept: bigint, user: bigint, code: number): Promise<void> {
  await tx`
    SELECT setval(s.seq, s.value)
    FROM (VALUES (pg_get_serial_sequence('sys_dept', 'dept_id')::regclass, ${String(dept)}::bigint),
                 (pg_get_serial_sequence('sys_user', 'user_id')::regclass, ${String(user)}::bigint),
                 ('sys_tenant_code_seq'::regclass, ${code}::bigint)) AS s(seq, value)
    WHERE s.value > COALESCE(pg_sequence_last_value(s.seq), 0)`;
}
