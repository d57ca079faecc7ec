import type { Id } from '../core/ids.js';
import type { Db } from '../db/database.js';
import { builtOnce } from '../db/fields.js';
import { formatDateTime } from '../core/time.js';

// One department as the JSON text the API answers, fields in the order of the
// Dept schema: exactly what JSON.stringify (and the route's serializer) make
// of the record getDept reads, so its hash is the record's ETag (etagOf).
// Sent as is rather than read into an object and serialised again: `GET
// /{id}` so spares parsing fifteen columns into a record, two timestamps
// into Dates, and serialising the record twice (for the answer and for its
// ETag); the chart (dept.chart.ts) builds its cached bytes from it.
// tests/dept.chart.test.ts holds every form equal to JSON.stringify of the
// record, byte for byte.
//
// Two forms of the same text. `list` has the database write the text of
// every field up to createBy (to_json escapes strings exactly as
// JSON.stringify does; on PostgreSQL that work is off this process). `tree`
// and `GET /{id}` write it here from plain columns (plainText), which is the
// cheaper of the two in embedded mode, where the database runs in this
// process and its to_json costs more than JSON.stringify. Either way the
// times leave the database as epoch milliseconds (no timestamp text to
// parse) and are formatted here, in the process time zone, like everywhere
// else. Each object is left open for its caller to close (`list` after the
// row, `tree` after the node's children).

/** An id column as JSON text: a number up to 2^53-1, a quoted string above (docs/api-rules.md#ids). */
const ID_TEXT = (column: string) => `CASE WHEN ${column} <= 9007199254740991 THEN ${column}::text ELSE '"' || ${column} || '"' END`;

const DB_TEXT_COLUMNS_TEXT = `
  '{"deptId":' || ${ID_TEXT('dept_id')} || ',"parentId":' || ${ID_TEXT('parent_id')} || ',"ancestors":' || to_json(ancestors)::text
    || ',"deptName":' || to_json(dept_name)::text || ',"orderNum":' || order_num
    || ',"leader":' || coalesce(to_json(leader)::text, 'null') || ',"phone":' || coalesce(to_json(phone)::text, 'null')
    || ',"email":' || coalesce(to_json(email)::text, 'null') || ',"status":' || to_json(status)::text
    || ',"delFlag":' || to_json(del_flag)::text || ',"tenantId":' || to_json(tenant_id)::text
    || ',"createBy":' || to_json(create_by)::text AS head,
  (extract(epoch FROM create_time) * 1000)::float8 AS create_ms,
  to_json(update_by)::text AS update_by,
  (extract(epoch FROM update_time) * 1000)::float8 AS update_ms`;

/** The cache key of both SELECT lists (builtOnce keys its texts by an object). */
const ROW_TEXT = { name: 'dept row text' };

/** The SELECT list of DbTextRow over sys_dept (unaliased), one fragment made once: no query object per read. */
export const DB_TEXT_COLUMNS = (sql: Db) => builtOnce(sql, ROW_TEXT, 'db', () => DB_TEXT_COLUMNS_TEXT);

export interface DbTextRow {
  head: string;
  create_ms: number;
  /** JSON text: a quoted string, or null for a department never updated. */
  update_by: string | null;
  update_ms: number | null;
}

/** A time as JSON: `"YYYY-MM-DD HH:mm:ss"` in the process time zone, or null. */
const time = (ms: number | null) => (ms === null ? 'null' : `"${formatDateTime(new Date(ms))}"`);

/** The department's JSON object, left open. */
export const dbText = (r: DbTextRow) =>
  `${r.head},"createTime":${time(r.create_ms)},"updateBy":${r.update_by ?? 'null'},"updateTime":${time(r.update_ms)}`;

const PLAIN_COLUMNS_TEXT = `
  dept_id AS id, parent_id AS parent, ancestors, dept_name AS name, order_num AS order, leader, phone, email, status,
  del_flag, tenant_id, create_by, (extract(epoch FROM create_time) * 1000)::float8 AS create_ms,
  update_by, (extract(epoch FROM update_time) * 1000)::float8 AS update_ms`;

/** The SELECT list of PlainRow over sys_dept (unaliased), one fragment made once. */
export const PLAIN_COLUMNS = (sql: Db) => builtOnce(sql, ROW_TEXT, 'plain', () => PLAIN_COLUMNS_TEXT);

/** A department's columns as they come for plainText. */
export interface PlainRow {
  id: Id;
  parent: Id;
  ancestors: string;
  name: string;
  order: number;
  leader: string | null;
  phone: string | null;
  email: string | null;
  status: string;
  del_flag: string;
  tenant_id: string;
  create_by: string;
  create_ms: number;
  update_by: string | null;
  update_ms: number | null;
}

const json = (text: string | null) => (text === null ? 'null' : JSON.stringify(text));
/** An id as JSON: a number up to 2^53-1, a string above (docs/api-rules.md#ids; the database's text: ID_TEXT). */
const idJson = (id: Id) => (typeof id === 'number' ? id : `"${id}"`);

/** The same text as dbText (JSON.stringify escapes strings as to_json does), left open. */
export const plainText = (r: PlainRow) =>
  `{"deptId":${idJson(r.id)},"parentId":${idJson(r.parent)},"ancestors":${json(r.ancestors)},"deptName":${json(r.name)},"orderNum":${r.order}` +
  `,"leader":${json(r.leader)},"phone":${json(r.phone)},"email":${json(r.email)},"status":${json(r.status)},"delFlag":${json(r.del_flag)}` +
  `,"tenantId":${json(r.tenant_id)},"createBy":${json(r.create_by)},"createTime":${time(r.create_ms)},"updateBy":${json(r.update_by)}` +
  `,"updateTime":${time(r.update_ms)}`;
