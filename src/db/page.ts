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
