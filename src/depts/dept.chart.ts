import { createHash } from 'node:crypto';
import type { Db, Sql } from '../db/database.js';
import { listFilter } from './dept.sql.js';
import { formatDateTime } from '../core/time.js';
import type { DeptListQuery } from './dept.schema.js';
import { transaction } from '../db/retry.js';
import { cacheCounts, type CacheCounts } from '../core/cache.counts.js';

// The organisation chart (dept `list` and `tree`) as cached, pre-serialised
// envelopes. Every department write moves its tenant's version on in the same
// transaction (triggers in sql/005_dept_chart_version.sql, made a vector of
// slots in sql/010_concurrent_writes.sql so writes do not queue on it), so a
// read costs one version lookup; the bytes of a (tenant, version, query) are
// built once, from the same snapshot as the version, and reused until evicted.
// Equal versions mean equal charts, so an ETag names exactly one chart.

export type ChartKind = 'list' | 'tree';

export interface Chart {
  etag: string;
  /** The whole response body, envelope included, in chunks of up to 1 MiB (one for most charts). */
  body: Buffer[];
  bytes: number;
}

/**
 * The tenant's current chart version: its slots' values (each a sequence
 * value written by the last write through that slot), as one text; "0"
 * until its departments are first written.
 */
export async function chartVersion(sql: Db, tenantId: string): Promise<string> {
  const [row] = await sql<{ version: string | null }[]>`
    SELECT string_agg(slot || ':' || version, ',' ORDER BY slot) AS version FROM dept_chart_version WHERE tenant_id = ${tenantId}`;
  return row?.version ?? '0';
}

/** A stable text for the filters, in one order, so equal queries share one entry. */
function queryKey(kind: ChartKind, query: DeptListQuery): string {
  return kind === 'tree' ? 'tree' : `list:${JSON.stringify([query.deptName ?? null, query.status ?? null, query.parentId ?? null])}`;
}

export function chartEtag(tenantId: string, version: string, kind: ChartKind, query: DeptListQuery): string {
  const hash = createHash('sha1')
    .update(`${tenantId}\0${queryKey(kind, query)}\0${version}`)
    .digest('base64url')
    .slice(0, 22);
  return `"dc-${hash}"`;
}

// ---------------------------------------------------------------- serialisation

// One department as JSON, fields in the order of the Dept schema (what the
// route's serializer produced before). The database writes the text of every
// field up to createBy (to_json escapes strings exactly as JSON.stringify
// does); the times leave as epoch milliseconds and are formatted here, in the
// process time zone, like everywhere else. The object is left open so a tree
// node can append its children.
const ROW_COLUMNS = (sql: Db) => sql`
  '{"deptId":' || dept_id || ',"parentId":' || parent_id || ',"ancestors":' || to_json(ancestors)::text
    || ',"deptName":' || to_json(dept_name)::text || ',"orderNum":' || order_num
    || ',"leader":' || coalesce(to_json(leader)::text, 'null') || ',"phone":' || coalesce(to_json(phone)::text, 'null')
    || ',"email":' || coalesce(to_json(email)::text, 'null') || ',"status":' || to_json(status)::text
    || ',"delFlag":' || to_json(del_flag)::text || ',"tenantId":' || to_json(tenant_id)::text
    || ',"createBy":' || to_json(create_by)::text AS head,
  (extract(epoch FROM create_time) * 1000)::float8 AS create_ms,
  to_json(update_by)::text AS update_by,
  (extract(epoch FROM update_time) * 1000)::float8 AS update_ms`;

interface ChartRow {
  head: string;
  create_ms: number;
  update_by: string;
  update_ms: number | null;
  /** tree only: 1 for a root, its parent's depth + 1 below. */
  depth: number;
}

const time = (ms: number | null) => (ms === null ? 'null' : `"${formatDateTime(new Date(ms))}"`);
const objectOf = (r: ChartRow) => `${r.head},"createTime":${time(r.create_ms)},"updateBy":${r.update_by},"updateTime":${time(r.update_ms)}`;

const ENVELOPE_HEAD = '{"code":200,"msg":"success","data":[';
const ENVELOPE_TAIL = ']}';
const CHILDREN_OPEN = ',"children":[';
const CLOSE_NODE = ']}';
/** Rows are fetched and written out in batches: a big tenant's rows are never all in memory at once. */
const BATCH = 2_000;
const CHUNK = 1 << 20;

/**
 * The response body as UTF-8, written straight into chunks of 1 MiB as the
 * rows arrive, so building a chart holds its bytes once (the bytes the cache
 * keeps), not the rows and the bytes, or fragments and a copy.
 */
class ChunkWriter {
  private readonly chunks: Buffer[] = [];
  private current = Buffer.allocUnsafeSlow(0);
  private used = 0;
  bytes = 0;

  write(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit: a text that may not fit starts a new chunk.
    if (this.current.length - this.used < text.length * 3) this.next(text.length * 3);
    const written = this.current.write(text, this.used);
    this.used += written;
    this.bytes += written;
  }

  private next(atLeast: number): void {
    if (this.used > 0) this.chunks.push(this.current.subarray(0, this.used));
    this.current = Buffer.allocUnsafeSlow(Math.max(CHUNK, atLeast));
    this.used = 0;
  }

  /** The chunks; the last one copied to its exact size, so a small chart holds no unused memory. */
  finish(): Buffer[] {
    if (this.used > 0) this.chunks.push(Buffer.from(this.current.subarray(0, this.used)));
    this.current = Buffer.allocUnsafeSlow(0);
    return this.chunks;
  }
}

/** The filtered rows in list order: (parentId, orderNum, deptId). */
function listRows(tx: Db, tenantId: string, query: DeptListQuery) {
  return tx<ChartRow[]>`
    SELECT ${ROW_COLUMNS(tx)} FROM sys_dept WHERE ${listFilter(tx, tenantId, query)}
    ORDER BY parent_id, order_num, dept_id`;
}

/**
 * Every live department in the order the tree is written (depth first,
 * children in list order), with its depth, so the nesting is written as the
 * rows stream in. Roots are the departments whose parent is not live (parent
 * 0), in list order. The sort key is the path of (orderNum, deptId) pairs
 * from the root, as bytes (int8send: 8 bytes, big-endian), whose plain
 * comparison is numeric order since ids and order numbers are never negative
 * (CHECK constraints); a node's key is a prefix of its descendants', so it
 * sorts just before them.
 */
function treeRows(tx: Db, tenantId: string) {
  return tx<ChartRow[]>`
    WITH RECURSIVE walk AS (
      SELECT d.*, 1 AS depth,
        int8send(d.parent_id) || int8send(d.order_num::bigint) || int8send(d.dept_id) AS path
      FROM sys_dept d
      WHERE d.tenant_id = ${tenantId} AND d.del_flag = '0'
        AND NOT EXISTS (SELECT 1 FROM sys_dept p WHERE p.tenant_id = ${tenantId} AND p.dept_id = d.parent_id AND p.del_flag = '0')
      UNION ALL
      SELECT d.*, w.depth + 1,
        w.path || int8send(d.order_num::bigint) || int8send(d.dept_id)
      FROM walk w JOIN sys_dept d ON d.tenant_id = ${tenantId} AND d.parent_id = w.dept_id AND d.del_flag = '0'
    )
    SELECT ${ROW_COLUMNS(tx)}, depth FROM walk ORDER BY path`;
}

/**
 * Reads the version and the rows in one REPEATABLE READ snapshot, so the
 * bytes are never labelled with a version they do not belong to, and writes
 * the envelope. `list` is written in row order; `tree` nests the rows as they
 * come (depth first): a node opens `,"children":[`, and the next row's depth
 * says how many open nodes to close before it.
 */
async function buildChart(
  sql: Sql,
  tenantId: string,
  kind: ChartKind,
  query: DeptListQuery,
): Promise<{ version: string; body: Buffer[]; bytes: number }> {
  return transaction(
    sql,
    async (tx) => {
      const version = await chartVersion(tx, tenantId);
      const out = new ChunkWriter();
      out.write(ENVELOPE_HEAD);
      if (kind === 'list') {
        let first = true;
        await listRows(tx, tenantId, query).cursor(BATCH, (rows) => {
          for (const r of rows) {
            out.write(first ? `${objectOf(r)}}` : `,${objectOf(r)}}`);
            first = false;
          }
        });
      } else {
        // The path sort of a big tenant's rows stays in memory rather than spilling to disk.
        await tx`SET LOCAL work_mem = '64MB'`;
        let open = 0;
        await treeRows(tx, tenantId).cursor(BATCH, (rows) => {
          for (const r of rows) {
            // A first child (depth open + 1) follows its parent's `[`; anything else closes down to its level.
            let text = '';
            if (r.depth <= open) {
              text = CLOSE_NODE.repeat(open - r.depth + 1) + ',';
              open = r.depth - 1;
            }
            out.write(`${text}${objectOf(r)}${CHILDREN_OPEN}`);
            open++;
          }
        });
        out.write(CLOSE_NODE.repeat(open));
      }
      out.write(ENVELOPE_TAIL);
      const bytes = out.bytes;
      return { version, body: out.finish(), bytes };
    },
    'isolation level repeatable read read only',
  );
}

// ---------------------------------------------------------------- the cache

/**
 * Serialised charts by (tenant, version, query), least recently used evicted
 * first, bounded in bytes. A chart larger than the whole budget is served
 * but not kept. Concurrent misses of one key share one build.
 */
export class ChartCache {
  /** key (tenant, query, version) -> bytes, in least-recently-used-first order. */
  private readonly entries = new Map<string, { body: Buffer[]; bytes: number }>();
  /** (tenant, query) -> the key of its one kept version: an older chart is never served again. */
  private readonly current = new Map<string, string>();
  private readonly building = new Map<string, Promise<Chart>>();
  private bytes = 0;

  constructor(
    readonly maxBytes: number,
    private readonly counts: CacheCounts = cacheCounts(),
  ) {}

  async get(sql: Sql, tenantId: string, version: string, kind: ChartKind, query: DeptListQuery): Promise<Chart> {
    const chart = `${tenantId}\0${queryKey(kind, query)}`;
    const key = `${chart}\0${version}`;
    const found = this.entries.get(key);
    if (found) {
      this.counts.hits++;
      // Map order is the LRU order: move the hit to the end.
      this.entries.delete(key);
      this.entries.set(key, found);
      return { etag: chartEtag(tenantId, version, kind, query), ...found };
    }
    // A chart being built is a miss too: this request waits for the database.
    this.counts.misses++;
    const pending = this.building.get(key);
    if (pending) return pending;
    // The chart moved on: free the old bytes before building the new ones (a big tenant's are tens of MB).
    const previous = this.current.get(chart);
    if (previous !== undefined) this.drop(previous);
    const promise = buildChart(sql, tenantId, kind, query)
      .then((built) => {
        // The snapshot may be newer than the version looked up a moment ago: label it with its own.
        const entry = { body: built.body, bytes: built.bytes };
        this.put(chart, `${chart}\0${built.version}`, entry);
        return { etag: chartEtag(tenantId, built.version, kind, query), ...entry };
      })
      .finally(() => this.building.delete(key));
    this.building.set(key, promise);
    return promise;
  }

  private put(chart: string, key: string, entry: { body: Buffer[]; bytes: number }): void {
    const previous = this.current.get(chart);
    if (previous !== undefined) this.drop(previous);
    if (entry.bytes > this.maxBytes) return;
    this.entries.set(key, entry);
    this.current.set(chart, key);
    this.bytes += entry.bytes;
    for (const oldest of this.entries.keys()) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldest);
    }
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
    const chart = key.slice(0, key.lastIndexOf('\0'));
    if (this.current.get(chart) === key) this.current.delete(chart);
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
