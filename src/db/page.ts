import type { PendingQuery, Row } from 'postgres';
import type { Db } from './database.js';

/** A piece of SQL built with the sql tag, to be placed inside another statement. */
type Fragment = PendingQuery<Row[]>;

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
const EXACT_TOTAL_UP_TO = 1_000;

/**
 * The number of rows `from` holds, counted up to the larger of
 * EXACT_TOTAL_UP_TO and the end of the page asked for (so a client always
 * learns whether there is a page after it); past that, the bound and
 * `totalExact: false`. `from(n)` is the FROM clause (with its WHERE) of at
 * most n rows, for lists that read a limited run per tenant.
 */
export async function countUpTo(sql: Db, from: (n: number) => Fragment, page: PageQuery): Promise<{ total: number; totalExact: boolean }> {
  const bound = Math.max(EXACT_TOTAL_UP_TO, page.pageNum * page.pageSize);
  const [row] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM (SELECT 1 FROM ${from(bound + 1)} LIMIT ${bound + 1}) counted`;
  return row!.n > bound ? { total: bound, totalExact: false } : { total: row!.n, totalExact: true };
}

/** pageOf with the count bounded by countUpTo. */
export async function boundedPageOf<T extends object>(
  sql: Db,
  query: { select: Fragment; from: Fragment; orderBy: Fragment },
  page: PageQuery,
): Promise<{ total: number; totalExact: boolean; rows: T[] }> {
  const counted = await countUpTo(sql, () => query.from, page);
  const rows = await sql<T[]>`
    SELECT ${query.select} FROM ${query.from}
    ORDER BY ${query.orderBy}
    LIMIT ${page.pageSize} OFFSET ${(page.pageNum - 1) * page.pageSize}`;
  return { ...counted, rows: Array.from(rows) };
}
