import type { PendingQuery, Row } from 'postgres';
import type { Db } from '../db/database.js';
import { acrossTenants, isOnCitus } from '../db/citus.js';
import { keyedPageOf } from '../db/page.js';
import { contains } from '../db/sql.helpers.js';
import { assert } from '../core/app.error.js';
import { isSuperadmin, type Caller } from '../identity/caller.js';
import { tenantsReadableBy } from '../identity/scope.js';
import type { AuditListQuery, AuditRecord } from './audit.schema.js';
import { recordColumns, toAuditRecord } from './audit.fields.js';
import { newestPage, withinNewest } from './audit.newest.js';

/** The channel a sequencer run announces new positions on, to every node (LISTEN/NOTIFY). */
export const FEED_CHANNEL = 'audit_feed';

/** A piece of SQL built with the sql tag, to be placed inside another statement. */
type Fragment = PendingQuery<Row[]>;

/**
 * Rule: a caller sees the records of its own tenant and of every tenant
 * below it; the superadmin sees every record, failed logins that named a
 * tenant which does not exist included. Records without a position are not
 * in the feed yet, so no reader sees them.
 *
 * How they are read (the plans differ, the set is the same): the
 * superadmin's walk the position index directly. Anyone else's read the
 * (tenant_id, position) index once per visible tenant, each run limited to
 * the rows the page can use, and merge the runs: walking the whole log in
 * position order for a small tenant's few records reads most of the log to
 * fill one page (docs/benchmark.md#reads-across-10000-tenants). The visible
 * tenants are found by the scope rule (identity/scope.ts), a walk down from
 * the caller's tenant.
 */
function visibleRecords(sql: Db, viewer: Caller, where: Fragment, order: 'ASC' | 'DESC') {
  const direction = order === 'ASC' ? sql`ASC` : sql`DESC`;
  if (isSuperadmin(viewer)) return (_run: number) => sql`audit_log a WHERE a.position IS NOT NULL ${where}`;
  // Citus pushes no lateral walk with a LIMIT per tenant down to the shards: there each shard reads its own
  // tenants of the caller's, and the coordinator merges them in position order.
  if (isOnCitus()) return (_run: number) => sql`audit_log a WHERE ${tenantsReadableBy(sql, viewer, 'a')} AND a.position IS NOT NULL ${where}`;
  return (run: number) => sql`
    (SELECT s.tenant_id FROM sys_tenant s WHERE ${tenantsReadableBy(sql, viewer, 's')}) v
    CROSS JOIN LATERAL (
      SELECT a.* FROM audit_log a
      WHERE a.tenant_id = v.tenant_id AND a.position IS NOT NULL ${where}
      ORDER BY a.position ${direction} LIMIT ${run}) a`;
}

/** "2026-01-31" or "2026-01-31 08:00:00" in the server's time zone; `end` makes a bound exclusive just after it. */
function timeBound(text: string, field: string, end: boolean): Date {
  const [y, m, d, h = 0, mi = 0, s = 0] = text.split(/[- :]/).map(Number) as [number, number, number, number?, number?, number?];
  const date = new Date(y, m - 1, d, h, mi, s);
  const exact = date.getFullYear() === y && date.getMonth() === m - 1 && date.getDate() === d && date.getHours() === h && date.getMinutes() === mi;
  assert(exact && date.getSeconds() === s, 400, `${field} ${text} is not a valid date and time`);
  if (end && text.length === 10) date.setDate(date.getDate() + 1);
  else if (end) date.setSeconds(date.getSeconds() + 1);
  return date;
}

/** Positions per block of audit_time_block (sql/014_audit_time_blocks.sql). */
export const BLOCK = 256;

/**
 * The positions a superadmin's time window can hold records at: from the
 * bottom of the first position block whose time span meets the window to
 * the top of the last (sql/014_audit_time_blocks.sql); undefined when no
 * block meets it. Positions follow times closely (a record is positioned
 * soon after it is written), so those blocks are few and lie together, and
 * their number follows the window's records, not the log's
 * (docs/benchmark.md#reads-across-10000-tenants).
 *
 * Read in a statement of its own, before the page's: with the blocks as
 * subqueries of the page's statement, the generic plan priced the lookup by
 * the table's size on disk (large after a bulk load that widened the blocks
 * record by record) and the statement was planned anew on every request,
 * which took as long as the read.
 */
async function windowPositions(sql: Db, begin: Date | undefined, end: Date | undefined) {
  // OFFSET 0: the blocks are found by their span (the max_time index), then their least and greatest taken; left
  // to itself the planner walked the blocks in number order from block 0 for the first that meets the window.
  const [row] = await sql<{ low: string | null; high: string | null }[]>`
    SELECT (min(m.block) * ${BLOCK})::text AS low, ((max(m.block) + 1) * ${BLOCK})::text AS high
    FROM (SELECT b.block FROM audit_time_block b
          WHERE ${begin !== undefined ? sql`b.max_time >= ${begin}` : sql`true`} AND ${end !== undefined ? sql`b.min_time < ${end}` : sql`true`}
          OFFSET 0) m`;
  return row!.low === null ? undefined : { low: row!.low, high: row!.high! };
}

/**
 * The page of a superadmin's time window, newest first by position: the
 * keys for keyedPageOf's `pageKeys`, counted apart. The position index is
 * walked newest first between the window's positions (windowPositions),
 * passing over the records outside the window, until the page is found:
 * the walk stops once the page is full, where reading the whole window by
 * the time index and keeping the newest read all of it
 * (docs/benchmark.md#reads-across-10000-tenants).
 * `filters` are the list's other conditions (none with an index of its own).
 */
function windowPage(
  sql: Db,
  filters: Fragment,
  begin: Date | undefined,
  end: Date | undefined,
  positions: { low: string; high: string } | undefined,
) {
  // The window's test as one opaque condition: the (time, position) index cannot serve it, so the page is walked
  // by position (with it, the planner read the whole window by time, bounded by the positions, and sorted it).
  const inWindow = sql`(${begin !== undefined ? sql`a.time >= ${begin}` : sql`true`} AND ${end !== undefined ? sql`a.time < ${end}` : sql`true`}) IS TRUE`;
  return (limit: number, offset: number) =>
    positions === undefined
      ? sql`'{}'::bigint[]`
      : sql`
    ARRAY(SELECT a.position FROM audit_log a
          WHERE a.position >= ${positions.low}::bigint AND a.position < ${positions.high}::bigint AND ${inWindow} ${filters}
          ORDER BY a.position DESC LIMIT ${limit} OFFSET ${offset})`;
}

/** The filtered records a caller may see, newest first, one page; the total counted up to a bound (db/page.ts keyedPageOf). */
export async function listAudit(
  sql: Db,
  viewer: Caller,
  query: AuditListQuery,
): Promise<{ total: number; totalExact: boolean; rows: AuditRecord[] }> {
  const begin = query.beginTime !== undefined ? timeBound(query.beginTime, 'beginTime', false) : undefined;
  const end = query.endTime !== undefined ? timeBound(query.endTime, 'endTime', true) : undefined;
  const filters = sql`
    ${query.action !== undefined ? sql`AND a.action = ${query.action}` : sql``}
    ${query.entityType !== undefined ? sql`AND a.entity_type = ${query.entityType}` : sql``}
    ${query.entityId !== undefined ? sql`AND a.entity_id = ${query.entityId}` : sql``}
    ${query.userName !== undefined ? sql`AND ${contains(sql, sql`a.user_name`, query.userName)}` : sql``}
    ${query.tenantId !== undefined ? sql`AND a.tenant_id = ${query.tenantId}` : sql``}`;
  const where = sql`
    ${filters}
    ${begin !== undefined ? sql`AND a.time >= ${begin}` : sql``}
    ${end !== undefined ? sql`AND a.time < ${end}` : sql``}`;
  const unfiltered = [query.action, query.entityType, query.entityId, query.userName, query.tenantId, begin, end].every((v) => v === undefined);
  if (isSuperadmin(viewer) && unfiltered && withinNewest(query)) return newestPage(sql, query);
  const from = visibleRecords(sql, viewer, where, 'DESC');
  // The walk over positions reads an index alone for most filters: the superadmin's each have a
  // (column, position) index or, for the user name and the time, the position index carries them
  // (sql/018_audit_position_covering.sql); the per-tenant index carries both too (sql/012_list_indexes.sql).
  // The superadmin's time window without such a filter is walked between the position blocks it meets (windowPage).
  const byTime =
    isSuperadmin(viewer) &&
    (begin !== undefined || end !== undefined) &&
    query.action === undefined &&
    query.entityType === undefined &&
    query.entityId === undefined &&
    query.tenantId === undefined;
  const pageKeys = byTime ? windowPage(sql, filters, begin, end, await windowPositions(sql, begin, end)) : undefined;
  // A user's list names its tenant; an admin's or the superadmin's reads several by design (docs/scale-out.md).
  const page = await acrossTenants(sql, (db) =>
    keyedPageOf<Row>(
      db,
      {
        key: sql`a.position`,
        descending: true,
        from,
        row: (k) => sql`SELECT ${recordColumns(sql)} FROM audit_log a WHERE a.position = ${k}`,
        shardKey: sql`a.tenant_id`,
        rowsOf: (keys, tenants) => sql`SELECT a.position::text AS "pageKey", ${recordColumns(sql)} FROM audit_log a
          WHERE ${tenants ? sql`a.tenant_id = ANY (${tenants}) AND` : sql``} a.position = ANY (${keys}::bigint[])`,
        ...(pageKeys && { pageKeys }),
      },
      query,
    ),
  );
  return { ...page, rows: page.rows.map(toAuditRecord) };
}

/**
 * Rule: a reader of the feed (the change feed, its stream, the webhooks) reads
 * no record above the published position (audit.sequencer.ts says why), read
 * once as a value before the records: on Citus a subquery of audit_feed in a
 * statement over every shard is read from each server's own copy, which a
 * publish reaches one server after another, so one shard's part could stop at
 * the new position and another's at the old: a cursor would pass a record unseen.
 */
export async function publishedPosition(sql: Db): Promise<string> {
  const [feed] = await sql<{ last: string }[]>`SELECT last_position::text AS last FROM audit_feed WHERE id = 1`;
  return feed!.last;
}
export const published = (sql: Db, last: string, alias = 'a') => sql`${sql(alias)}.position <= ${last}::bigint`;

/** The feed: up to `limit` visible records after the cursor, in position (commit) order. */
export async function changesAfter(sql: Db, viewer: Caller, after: string | undefined, limit: number): Promise<AuditRecord[]> {
  const last = await publishedPosition(sql);
  const from = visibleRecords(sql, viewer, sql`AND a.position > ${after ?? '0'}::bigint AND ${published(sql, last)}`, 'ASC');
  const rows = await acrossTenants(
    sql,
    (db) => db`
    SELECT ${recordColumns(db)} FROM ${from(limit)}
    ORDER BY a.position
    LIMIT ${limit}`,
  );
  return rows.map(toAuditRecord);
}

/** The feed's backlog for the metrics (docs/operations.md#metrics): records without a position yet, and the last published. */
export async function feedBacklog(sql: Db): Promise<{ unsequenced: number; lastPosition: number }> {
  const [row] = await acrossTenants(
    sql,
    (db) => db<{ unsequenced: number; last_position: number }[]>`
    SELECT (SELECT count(*) FROM audit_log WHERE position IS NULL) AS unsequenced,
      (SELECT last_position FROM audit_feed WHERE id = 1) AS last_position`,
  );
  return { unsequenced: row!.unsequenced, lastPosition: row!.last_position };
}
