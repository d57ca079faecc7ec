import type { Db } from '../db/database.js';
import { countBound, type Fragment, type PageQuery } from '../db/page.js';

// The platform's tenant list by page number, without a filter: every live
// tenant in id order. A page far down it walked every live id before it, so
// the cost of a page grew with its number
// (docs/benchmark.md#scale-milliseconds-against-a-handful-of-rows). Here the
// live ids are kept in memory, in order, with the version of the tenant rows
// they were read at (sql/017_tenant_list_version.sql), and so are the pages
// answered from them.
// Each request reads the version first: while it is the same, no tenant has
// been written since (on any node), and the kept ids and pages are the answer
// as that request's own read would find it. Otherwise the ids are read anew.

/**
 * Above this many live tenants the ids are not kept (8 bytes each: 800 KB
 * here) and deep pages are walked; the version is still kept, so the ids
 * are not read again until a tenant is written.
 */
const MAX_KEPT = 100_000;

/** The answered pages' rows kept at most, all pages together; the least recently asked page goes first. */
const MAX_PAGE_ROWS = 2_000;

type TenantRow = Record<string, unknown>;

interface Kept {
  version: string;
  /** The live ids in order; undefined when there were more than MAX_KEPT. */
  ids: BigInt64Array | undefined;
  /** Answered pages by "pageNum:pageSize", in the order last asked. */
  pages: Map<string, TenantRow[]>;
  pageRows: number;
}

/** Per database (each test file's own, each node's pool). */
const keptBy = new WeakMap<Db, Kept>();

/** The tenant rows' version: the slots' values as one text, "0" before any tenant write. */
const VERSION = (sql: Db) => sql`
  (SELECT coalesce(string_agg(slot || ':' || version, ',' ORDER BY slot), '0') FROM sys_tenant_list_version)`;

/** The live ids in order and the version they were read at, from one snapshot. */
async function readLiveIds(sql: Db): Promise<Kept> {
  const [row] = await sql<{ version: string; ids: string | null; n: number }[]>`
    SELECT ${VERSION(sql)} AS version, string_agg(id::text, ',') AS ids, count(*)::int AS n
    FROM (SELECT id FROM sys_tenant WHERE del_flag = '0' ORDER BY id LIMIT ${MAX_KEPT + 1}) live`;
  const { version, ids, n } = row!;
  const kept = n > MAX_KEPT ? undefined : BigInt64Array.from(ids === null ? [] : ids.split(','), BigInt);
  return { version, ids: kept, pages: new Map(), pageRows: 0 };
}

/** The page's rows by their ids, or undefined when a tenant was written after `kept` was read. */
async function readPage(sql: Db, kept: Kept, ids: BigInt64Array, row: (k: Fragment) => Fragment): Promise<TenantRow[] | undefined> {
  const keys = Array.from(ids, String);
  const found = await sql<({ listVersion: string; pageKeyIndex: number | null } & TenantRow)[]>`
    SELECT v.version AS "listVersion", o.i AS "pageKeyIndex", r.*
    FROM (SELECT ${VERSION(sql)} AS version) v
    LEFT JOIN LATERAL unnest(${keys}::bigint[]) WITH ORDINALITY AS o (k, i) ON true
    LEFT JOIN LATERAL (${row(sql`o.k`)}) r ON true
    ORDER BY o.i`;
  if (found[0]!.listVersion !== kept.version) return undefined;
  return found.filter((r) => r.pageKeyIndex !== null).map(({ listVersion: _v, pageKeyIndex: _i, ...r }) => r);
}

function remember(kept: Kept, key: string, rows: TenantRow[]): void {
  kept.pages.set(key, rows);
  kept.pageRows += rows.length;
  for (const [oldest, old] of kept.pages) {
    if (kept.pageRows <= MAX_PAGE_ROWS) break;
    kept.pages.delete(oldest);
    kept.pageRows -= old.length;
  }
}

/**
 * The page of every live tenant by number, or undefined when the list is
 * walked instead (more than MAX_KEPT tenants, or a tenant written during
 * this request). `row(k)` selects the row whose id is `k`. The total follows
 * the list's counting rule (db/page.ts): exact up to the bound, then the
 * bound.
 */
export async function livePageByNumber(
  sql: Db,
  row: (k: Fragment) => Fragment,
  page: PageQuery,
): Promise<{ total: number; totalExact: boolean; rows: TenantRow[] } | undefined> {
  const [now] = await sql<{ version: string }[]>`SELECT ${VERSION(sql)} AS version`;
  let kept = keptBy.get(sql);
  if (kept?.version !== now!.version) keptBy.set(sql, (kept = await readLiveIds(sql)));
  if (kept.ids === undefined) return undefined;
  const key = `${page.pageNum}:${page.pageSize}`;
  let rows = kept.pages.get(key);
  if (rows !== undefined) {
    kept.pages.delete(key); // asked again: last in line to go
    kept.pages.set(key, rows);
  } else {
    const offset = (page.pageNum - 1) * page.pageSize;
    rows = await readPage(sql, kept, kept.ids.subarray(offset, offset + page.pageSize), row);
    if (rows === undefined) return undefined;
    remember(kept, key, rows);
  }
  const bound = countBound(page);
  return { total: Math.min(kept.ids.length, bound), totalExact: kept.ids.length <= bound, rows };
}
