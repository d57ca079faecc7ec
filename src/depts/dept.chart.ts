import { createHash } from 'node:crypto';
import type { Db, Sql } from '../db/database.js';
import { listFilter } from './dept.sql.js';
import { dbText, DB_TEXT_COLUMNS, PLAIN_COLUMNS, plainText, type DbTextRow, type PlainRow } from './dept.json.js';
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

const ENVELOPE_HEAD = '{"code":200,"msg":"success","data":[';
const ENVELOPE_TAIL = ']}';
const CHILDREN_OPEN = Buffer.from(',"children":[');
const CLOSE_NODE = Buffer.from(']}');
const COMMA = Buffer.from(',');
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

  /** Bytes already encoded (a row kept by RowArena). */
  writeBytes(bytes: Buffer): void {
    if (this.current.length - this.used < bytes.length) this.next(bytes.length);
    this.used += bytes.copy(this.current, this.used);
    this.bytes += bytes.length;
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
  return tx<DbTextRow[]>`
    SELECT ${DB_TEXT_COLUMNS(tx)} FROM sys_dept WHERE ${listFilter(tx, tenantId, query)}
    ORDER BY parent_id, order_num, dept_id`;
}

/**
 * Every live department, in no order: one sequential read, no sort and no
 * JSON built in the database (TreeRows orders and nests them, plainText
 * writes them: both cheaper here than in SQL, and in embedded mode neither
 * grows the database's memory, which never shrinks).
 */
function treeRows(tx: Db, tenantId: string) {
  return tx<PlainRow[]>`SELECT ${PLAIN_COLUMNS(tx)} FROM sys_dept WHERE ${listFilter(tx, tenantId, {})}`;
}

/**
 * A tree's rows as they are read: each row's JSON kept as UTF-8 in 1 MiB
 * slabs (about the size of the finished tree, a fraction of what the row
 * objects or their strings would hold), and per row only its id, parent,
 * order number and where its bytes are.
 */
class TreeRows {
  private readonly slabs: Buffer[] = [];
  private slab = Buffer.allocUnsafeSlow(0);
  private used = 0;
  private readonly ids: number[] = [];
  private readonly parents: number[] = [];
  private readonly orders: number[] = [];
  /** Per row: its slab, and its bytes' start and end in it. */
  private readonly where: number[] = [];

  add(r: PlainRow): void {
    const text = plainText(r);
    if (this.slab.length - this.used < text.length * 3) {
      this.slab = Buffer.allocUnsafeSlow(Math.max(CHUNK, text.length * 3));
      this.slabs.push(this.slab);
      this.used = 0;
    }
    const start = this.used;
    this.used += this.slab.write(text, start);
    this.ids.push(r.id);
    this.parents.push(r.parent);
    this.orders.push(r.order);
    this.where.push(this.slabs.length - 1, start, this.used);
  }

  private bytesOf(row: number): Buffer {
    const at = row * 3;
    return this.slabs[this.where[at]!]!.subarray(this.where[at + 1], this.where[at + 2]);
  }

  /**
   * Writes the rows nested, depth first, exactly as toTree(listDepts) nests
   * them: roots (rows whose parent is not live) in list order (parentId,
   * orderNum, deptId), each node's children in list order (orderNum,
   * deptId). Iterative, so depth costs no stack.
   */
  writeTo(out: ChunkWriter): void {
    const { ids, parents, orders } = this;
    const inListOrder = (a: number, b: number) => orders[a]! - orders[b]! || ids[a]! - ids[b]!;
    const children = new Map<number, number[]>();
    for (let row = 0; row < ids.length; row++) {
      const siblings = children.get(parents[row]!);
      if (siblings) siblings.push(row);
      else children.set(parents[row]!, [row]);
    }
    for (const siblings of children.values()) siblings.sort(inListOrder);
    const live = new Set(ids);
    const roots = [...children.keys()]
      .filter((parent) => !live.has(parent))
      .sort((a, b) => a - b)
      .flatMap((parent) => children.get(parent)!);
    // Per open node: its children and how many of them are written.
    const open: { rows: number[]; next: number }[] = [{ rows: roots, next: 0 }];
    while (open.length > 0) {
      const level = open[open.length - 1]!;
      if (level.next === level.rows.length) {
        open.pop();
        if (open.length > 0) out.writeBytes(CLOSE_NODE);
        continue;
      }
      const row = level.rows[level.next++]!;
      if (level.next > 1) out.writeBytes(COMMA);
      out.writeBytes(this.bytesOf(row));
      out.writeBytes(CHILDREN_OPEN);
      open.push({ rows: children.get(ids[row]!) ?? NONE, next: 0 });
    }
  }
}

const NONE: number[] = [];

/**
 * Reads the version and the rows in one REPEATABLE READ snapshot, so the
 * bytes are never labelled with a version they do not belong to, and writes
 * the envelope. `list` is written in row order as the rows come. `tree` reads
 * the same rows in one sequential scan (no recursive walk, no sort in the
 * database), keeps them as bytes, then orders and writes them nested.
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
            out.write(first ? `${dbText(r)}}` : `,${dbText(r)}}`);
            first = false;
          }
        });
      } else {
        const rows = new TreeRows();
        await treeRows(tx, tenantId).cursor(BATCH, (batch) => {
          for (const r of batch) rows.add(r);
        });
        rows.writeTo(out);
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
