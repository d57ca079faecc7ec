import type { PendingQuery, Row } from 'postgres';
import type { Db } from './database.js';
import { builtOnce } from './fields.js';
import { isOnCitus } from './citus.js';

/** A piece of SQL built with the sql tag, to be placed inside another statement. */
export type Fragment = PendingQuery<Row[]>;

/** A page request as every list route takes it: 1-based pageNum, pageSize rows. */
export interface PageQuery {
  pageNum: number;
  pageSize: number;
}

/**
 * One page of `SELECT select FROM from ORDER BY orderBy` and the total
 * number of rows `from` holds (`from` carries the WHERE). The total is
 * counted by its own statement: `count(*) OVER ()` would say nothing on a
 * page past the end, where clients still expect the total.
 */
export async function pageOf<T extends object>(
  sql: Db,
  query: { select: Fragment; from: Fragment; orderBy: Fragment },
  page: PageQuery,
): Promise<{ total: number; rows: T[] }> {
  return windowOf<T>(sql, query, (page.pageNum - 1) * page.pageSize, page.pageSize);
}

/** The same by offset and limit (SCIM's startIndex and count); a limit of 0 reads the total alone. */
export async function windowOf<T extends object>(
  sql: Db,
  query: { select: Fragment; from: Fragment; orderBy: Fragment },
  offset: number,
  limit: number,
): Promise<{ total: number; rows: T[] }> {
  const [count] = await sql<{ total: number }[]>`SELECT count(*) AS total FROM ${query.from}`;
  if (limit === 0) return { total: count!.total, rows: [] };
  const rows = await sql<T[]>`
    SELECT ${query.select} FROM ${query.from}
    ORDER BY ${query.orderBy}
    LIMIT ${limit} OFFSET ${offset}`;
  return { total: count!.total, rows: Array.from(rows) };
}

/**
 * Where counting stops for lists that can grow without limit (tenants, the
 * audit trail): an exact count of a million audit records costs more than
 * the page itself, and a client paging by number needs no more than "at
 * least this many". docs/api-rules.md#paging.
 */
export const EXACT_TOTAL_UP_TO = 1_000;

/** How far a count goes: EXACT_TOTAL_UP_TO rows, or to the end of the page asked for. */
export const countBound = (page: PageQuery) => Math.max(EXACT_TOTAL_UP_TO, page.pageNum * page.pageSize);

/** Owns the text of the usual bound + 1 (builtOnce). */
const USUAL_LIMIT = { rows: EXACT_TOTAL_UP_TO + 1 };

/**
 * `n` rows as a LIMIT's value: the usual bound + 1 (EXACT_TOTAL_UP_TO + 1)
 * written into the statement's text (a number of the code's, never input),
 * any other number as a parameter. Why: PostgreSQL plans a prepared
 * statement for its parameters' values five times, then keeps one plan for
 * every value if that plan is priced no higher. A LIMIT or OFFSET that is a
 * parameter is priced as a tenth of the rows, so on a big table the kept
 * plan looked dear and every execution of a first page was planned anew
 * (planning cost as much as the walk itself), where on a small table it was
 * kept. With the bound in the text, the plan is priced for 1,001 rows and
 * kept (docs/benchmark.md).
 */
const rowLimit = (sql: Db, n: number): Fragment =>
  n === USUAL_LIMIT.rows ? builtOnce(sql, USUAL_LIMIT, 'limit', () => String(USUAL_LIMIT.rows)) : sql`${n}`;

/** The number of rows `from` holds, up to bound + 1 (a scalar subquery): one more than the bound says "more". */
const countedTo = (sql: Db, from: (n: number) => Fragment, bound: number) =>
  sql`(SELECT count(*)::int FROM (SELECT 1 FROM ${from(bound + 1)} LIMIT ${rowLimit(sql, bound + 1)}) counted)`;

/** The counting rule's answer for `counted` rows counted up to bound + 1: exact up to the bound, then the bound. */
export const totalUpTo = (counted: number, bound: number) =>
  counted > bound ? { total: bound, totalExact: false } : { total: counted, totalExact: true };

/**
 * The number of rows `from` holds, counted up to the larger of
 * EXACT_TOTAL_UP_TO and the end of the page asked for (so a client always
 * learns whether there is a page after it); past that, the bound and
 * `totalExact: false`. `from(n)` is the FROM clause (with its WHERE) of at
 * most n rows, for lists that read a limited run per tenant.
 */
async function countUpTo(sql: Db, from: (n: number) => Fragment, page: PageQuery): Promise<{ total: number; totalExact: boolean }> {
  const bound = countBound(page);
  const [row] = await sql<{ n: number }[]>`SELECT ${countedTo(sql, from, bound)} AS n`;
  return totalUpTo(row!.n, bound);
}

/**
 * One page of a list whose count stops at a bound (countUpTo's rule), in
 * one statement that walks the list once, keys only, then reads the page's
 * rows by key. Why: with `OFFSET` and a separate count, a deep page read and
 * built every full row before it and the count walked the same rows again
 * (docs/benchmark.md#reads-across-10000-tenants). The walk reads `key` alone, so an index holding the key and
 * the WHERE's columns answers it without the table (an index-only scan);
 * the rows come from `row(k)`, one primary-key read each.
 *
 * The walk skips `offset` keys and keeps the next ones up to the count's
 * bound + 1: their number is the total past the offset, the first pageSize
 * of them are the page (the aggregate orders them itself: the order its
 * input arrives in is not promised). A page past the end of such a walk
 * finds no keys and counts again (countUpTo) to say how many there are.
 * A page that ends within the first EXACT_TOTAL_UP_TO rows (page 1 to 100
 * of 10) walks the same first bound + 1 keys as the first page and takes
 * its slice of them: one statement text, and one kept plan, for all those
 * pages (rowLimit says why that matters), where an OFFSET parameter had
 * each planned anew; that walk counts from the start, so a page past its
 * end needs no second count, nor does the time window's (`pageKeys`).
 *
 * `pageKeys`: for a walk that no index gives in key order (the audit
 * list's time window, read from the (time, position) index). There the one
 * walk would sort the first bound + 1 rows in key order only to count them
 * and keep a page: on a busy day most of the read (docs/benchmark.md#reads-across-10000-tenants). Instead the
 * count stops after bound + 1 rows in whatever order they come, and the
 * page's keys are `pageKeys(limit, offset)`, an array of the keys in order
 * (the caller knows which read finds them soonest); the answer is the same.
 *
 * `key` is unique (so the order is total) and named with the alias `from`
 * uses; `from(n)` is the FROM clause (with its WHERE) of at most n rows, as
 * countUpTo's; `row(k)` selects the row whose key is the value `k`.
 */
export async function keyedPageOf<T extends object>(
  sql: Db,
  query: {
    key: Fragment;
    descending?: boolean;
    from: (n: number) => Fragment;
    row: (k: Fragment) => Fragment;
    pageKeys?: (limit: number, offset: number) => Fragment;
    /**
     * The rows of the keys `keys` (an array), each with its key as "pageKey", in any order: for a list of a
     * distributed table on Citus, which joins no lateral subquery of it to the keys; there the page's keys and
     * its rows are read by two statements. `shards`, when known, is an array of the rows' `shardKey` values,
     * for rowsOf to name so that Citus reads only their shards.
     */
    rowsOf?: RowsOf;
    /** The distribution column of the rows (on Citus): read beside the keys on the first pages, for rowsOf. */
    shardKey?: Fragment;
  },
  page: PageQuery,
): Promise<{ total: number; totalExact: boolean; rows: T[] }> {
  const bound = countBound(page);
  const offset = (page.pageNum - 1) * page.pageSize;
  const direction = query.descending ? sql`DESC` : sql`ASC`;
  if (query.rowsOf && query.shardKey && isOnCitus() && !query.pageKeys && bound === EXACT_TOTAL_UP_TO) {
    return firstPagesThenRows(sql, query as typeof query & Required<Pick<typeof query, 'rowsOf' | 'shardKey'>>, page, bound);
  }
  // `counted`: the rows counted from the start up to the bound + 1, or null where the walk began past the end of
  // the list (a deep OFFSET that found nothing: how many there are is counted apart); `keys`: the page's keys, in order.
  let tail: Fragment;
  if (query.pageKeys) {
    tail = sql`
      SELECT ${countedTo(sql, query.from, bound)} AS counted, ${query.pageKeys(page.pageSize, offset)} AS keys`;
  } else if (bound === EXACT_TOTAL_UP_TO) {
    // The page ends within the first bound rows: the first page's walk, and the page's slice of it.
    tail = sql`
      SELECT count(*)::int AS counted,
        (array_agg(k ORDER BY k ${direction}))[${offset + 1}:${offset + page.pageSize}] AS keys
      FROM (SELECT ${query.key} AS k FROM ${query.from(bound + 1)} ORDER BY ${query.key} ${direction} LIMIT ${rowLimit(sql, bound + 1)}) walked`;
  } else {
    tail = sql`
      SELECT CASE WHEN count(*) > 0 THEN ${offset}::int + count(*)::int END AS counted,
        (array_agg(k ORDER BY k ${direction}))[1:${page.pageSize}] AS keys
      FROM (SELECT ${query.key} AS k FROM ${query.from(bound + 1)} ORDER BY ${query.key} ${direction} LIMIT ${bound + 1 - offset} OFFSET ${offset}) walked`;
  }
  if (query.rowsOf && isOnCitus()) return keysThenRows(sql, tail, query.from, query.rowsOf, page, bound);
  const found = await sql<({ pageCounted: number | null; pageKeyIndex: number | null } & T)[]>`
    SELECT tail.counted AS "pageCounted", o.i AS "pageKeyIndex", r.*
    FROM (${tail}) tail
    LEFT JOIN LATERAL unnest(tail.keys) WITH ORDINALITY AS o (k, i) ON true
    LEFT JOIN LATERAL (${query.row(sql`o.k`)}) r ON true
    ORDER BY o.i`;
  const counted = found[0]!.pageCounted;
  if (counted === null) return { ...(await countUpTo(sql, query.from, page)), rows: [] };
  const rows = found.filter((r) => r.pageKeyIndex !== null).map(({ pageCounted: _c, pageKeyIndex: _i, ...row }) => row as unknown as T);
  return { ...totalUpTo(counted, bound), rows };
}

type RowsOf = (keys: Fragment, shards: Fragment | undefined) => Fragment;

/**
 * keyedPageOf's first pages on Citus: the walk as a statement of its own,
 * the first bound + 1 keys each with its shard key (counted here, the page
 * sliced here), then the page's rows from those shards only. Citus runs the
 * walk as one query over the shards, each giving its first bound + 1 in
 * order (the LIMIT pushed down to them), where the same walk as a subquery
 * of the count was run first into an intermediate result and read from
 * there (docs/scale-out.md#what-it-costs).
 */
async function firstPagesThenRows<T extends object>(
  sql: Db,
  query: { key: Fragment; descending?: boolean; from: (n: number) => Fragment; shardKey: Fragment; rowsOf: RowsOf },
  page: PageQuery,
  bound: number,
): Promise<{ total: number; totalExact: boolean; rows: T[] }> {
  const walked = await sql<{ k: string; s: string }[]>`
    SELECT ${query.key}::text AS k, ${query.shardKey}::text AS s FROM ${query.from(bound + 1)}
    ORDER BY ${query.key} ${query.descending ? sql`DESC` : sql`ASC`} LIMIT ${rowLimit(sql, bound + 1)}`;
  const onPage = walked.slice((page.pageNum - 1) * page.pageSize, page.pageNum * page.pageSize);
  const rows = await rowsInKeyOrder<T>(
    sql,
    query.rowsOf,
    onPage.map((r) => r.k),
    [...new Set(onPage.map((r) => r.s))],
  );
  return { ...totalUpTo(walked.length, bound), rows };
}

/** keyedPageOf on Citus past the first pages: the page's keys (`tail`), then their rows by key. */
async function keysThenRows<T extends object>(
  sql: Db,
  tail: Fragment,
  from: (n: number) => Fragment,
  rowsOf: RowsOf,
  page: PageQuery,
  bound: number,
): Promise<{ total: number; totalExact: boolean; rows: T[] }> {
  const [head] = await sql<{ counted: number | null; keys: string[] | null }[]>`SELECT t.counted, t.keys::text[] AS keys FROM (${tail}) t`;
  if (head!.counted === null) return { ...(await countUpTo(sql, from, page)), rows: [] };
  const rows = await rowsInKeyOrder<T>(sql, rowsOf, head!.keys ?? [], undefined);
  return { ...totalUpTo(head!.counted, bound), rows };
}

/** The rows of `keys` by rowsOf (from the shards of `shards` when known), put in the keys' order. */
async function rowsInKeyOrder<T extends object>(sql: Db, rowsOf: RowsOf, keys: string[], shards: string[] | undefined): Promise<T[]> {
  if (keys.length === 0) return [];
  const found = await sql<({ pageKey: string } & T)[]>`${rowsOf(sql`${keys}::text[]`, shards && sql`${shards}::text[]`)}`;
  const byKey = new Map(found.map(({ pageKey, ...row }) => [String(pageKey), row as unknown as T]));
  return keys.flatMap((k) => (byKey.has(k) ? [byKey.get(k)!] : []));
}
