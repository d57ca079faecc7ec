import type { Db } from '../db/database.js';
import { builtOnce } from '../db/fields.js';
import { formatDateTime } from '../core/time.js';

// One department as the JSON text the API answers, fields in the order of the
// Dept schema: exactly what JSON.stringify (and the route's serializer) make
// of the record getDept reads, so its hash is the record's ETag (etagOf).
// Written by the database rather than read into an object and serialised
// again here: `GET /{id}` and the chart's `list` (dept.chart.ts) send it as
// is, which spares parsing fifteen columns, two timestamps and serialising
// the record twice (once for the answer, once for its ETag).
//
// The database writes the text of every field up to createBy (to_json
// escapes strings exactly as JSON.stringify does); the times leave as epoch
// milliseconds and are formatted here, in the process time zone, like
// everywhere else. The object is left open: the caller closes it (`list`
// after each row, `tree` after a node's children). tests/dept.chart.test.ts
// holds the text equal to JSON.stringify of the record, byte for byte.

const ROW_COLUMNS_TEXT = `
  '{"deptId":' || dept_id || ',"parentId":' || parent_id || ',"ancestors":' || to_json(ancestors)::text
    || ',"deptName":' || to_json(dept_name)::text || ',"orderNum":' || order_num
    || ',"leader":' || coalesce(to_json(leader)::text, 'null') || ',"phone":' || coalesce(to_json(phone)::text, 'null')
    || ',"email":' || coalesce(to_json(email)::text, 'null') || ',"status":' || to_json(status)::text
    || ',"delFlag":' || to_json(del_flag)::text || ',"tenantId":' || to_json(tenant_id)::text
    || ',"createBy":' || to_json(create_by)::text AS head,
  (extract(epoch FROM create_time) * 1000)::float8 AS create_ms,
  to_json(update_by)::text AS update_by,
  (extract(epoch FROM update_time) * 1000)::float8 AS update_ms`;

/** The cache key of ROW_COLUMNS (builtOnce keys its texts by an object). */
const ROW_TEXT = { name: 'dept row text' };

/** The SELECT list of DeptTextRow over sys_dept (unaliased), one fragment made once: no query object per read. */
export const ROW_COLUMNS = (sql: Db) => builtOnce(sql, ROW_TEXT, '', () => ROW_COLUMNS_TEXT);

export interface DeptTextRow {
  head: string;
  create_ms: number;
  /** JSON text: a quoted string, or null for a department never updated. */
  update_by: string | null;
  update_ms: number | null;
}

/** A time as JSON: `"YYYY-MM-DD HH:mm:ss"` in the process time zone, or null. */
export const time = (ms: number | null) => (ms === null ? 'null' : `"${formatDateTime(new Date(ms))}"`);

/** The department's JSON object, left open. */
export const deptText = (r: DeptTextRow) =>
  `${r.head},"createTime":${time(r.create_ms)},"updateBy":${r.update_by ?? 'null'},"updateTime":${time(r.update_ms)}`;
