import { createHash } from 'node:crypto';
import type { Db, Sql } from '../db/database.js';
import { containing } from '../db/sql.helpers.js';
import { formatDateTime } from '../time.js';
import type { DeptListQuery } from './dept.schema.js';

// The organisation chart (dept `list` and `tree`) as cached, pre-serialised
// envelopes. Every department write bumps its tenant's version in the same
// transaction (triggers in sql/005_dept_chart_version.sql), so a read costs one
// version lookup; the bytes of a (tenant, version, query) are built once, from
// the same snapshot as the version, and reused until evicted. Versions are
// unique per write (a sequence), so an ETag names exactly one chart.

export type ChartKind = 'list' | 'tree';

export interface Chart {
  etag: string;
  /** The whole response body, envelope included. */
  body: Buffer;
}

/** The tenant's current chart version; 0 until its departments are first written. */
export async function chartVersion(sql: Db, tenantId: string): Promise<number> {
  const [row] = await sql<{ version: number }[]>`SELECT version FROM dept_chart_version WHERE tenant_id = ${tenantId}`;
  return row?.version ?? 0;
}

/** A stable text for the filters, in one order, so equal queries share one entry. */
function queryKey(kind: ChartKind, query: DeptListQuery): string {
  return kind === 'tree' ? 'tree' : `list:${JSON.stringify([query.deptName ?? null, query.status ?? null, query.parentId ?? null])}`;
}

export function chartEtag(tenantId: string, version: number, kind: ChartKind, query: DeptListQuery): string {
  const hash = createHash('sha1')
    .update(`${tenantId}\0${queryKey(kind, query)}`)
    .digest('base64url')
    .slice(0, 12);
  return `"dc${version}-${hash}"`;
}

/** RFC 9110 If-None-Match: `*` or a list of entity tags, weak ones compared weakly. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}

// ---------------------------------------------------------------- serialisation

// One department as JSON, fields in the order of the Dept schema (what the
// route's serializer produced before). The database writes the text of every
// field up to createBy (to_json escapes strings exactly as JSON.stringify
// does); the times leave as epoch milliseconds and are formatted here, in the
// process time zone, like everywhere else. The object is left open so a tree
// node can append its children.
const ROW_COLUMNS = (sql: Db) => sql`
  dept_id, parent_id,
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
  dept_id: number;
  parent_id: number;
  head: string;
  create_ms: number;
  update_by: string;
  update_ms: number | null;
}

const time = (ms: number | null) => (ms === null ? 'null' : `"${formatDateTime(new Date(ms))}"`);

const ENVELOPE_HEAD = Buffer.from('{"code":200,"msg":"success","data":[');
const ENVELOPE_TAIL = Buffer.from(']}');
const CHILDREN_OPEN = Buffer.from(',"children":[');
const CHUNK = 1 << 20;
/** Rows are fetched and turned into bytes in batches: a big tenant never holds all its row objects at once. */
const BATCH = 2_000;

/** The open objects as UTF-8, packed into 1 MiB chunks (a fragment never straddles two). */
class Fragments {
  readonly chunks: Buffer[] = [];
  readonly chunk: number[] = [];
  readonly start: number[] = [];
  readonly length: number[] = [];
  bytes = 0;
  private current = Buffer.allocUnsafe(0);
  private used = 0;

  add(text: string): void {
    if (this.current.length - this.used < text.length * 3) {
      this.current = Buffer.allocUnsafe(Math.max(CHUNK, text.length * 3));
      this.chunks.push(this.current);
      this.used = 0;
    }
    const written = this.current.write(text, this.used);
    this.chunk.push(this.chunks.length - 1);
    this.start.push(this.used);
    this.length.push(written);
    this.used += written;
    this.bytes += written;
  }

  copy(i: number, target: Buffer, at: number): number {
    const from = this.start[i]!;
    return this.chunks[this.chunk[i]!]!.copy(target, at, from, from + this.length[i]!);
  }
}

/**
 * Reads the version and the rows in one REPEATABLE READ snapshot, so the
 * bytes are never labelled with a version they do not belong to, and builds
 * the envelope. `list` is written in row order; `tree` nests the same rows
 * (a department whose parent is not among them is a root), children in the
 * list's order (parentId, orderNum, deptId).
 */
export async function buildChart(sql: Sql, tenantId: string, kind: ChartKind, query: DeptListQuery): Promise<{ version: number; body: Buffer }> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const version = await chartVersion(tx, tenantId);
    const fragments = new Fragments();
    const ids: number[] = [];
    const parents: number[] = [];
    await tx<ChartRow[]>`
      SELECT ${ROW_COLUMNS(tx)} FROM sys_dept
      WHERE tenant_id = ${tenantId} AND del_flag = '0'
        ${query.deptName !== undefined ? tx`AND dept_name LIKE ${containing(query.deptName)}` : tx``}
        ${query.status !== undefined ? tx`AND status = ${query.status}` : tx``}
        ${query.parentId !== undefined ? tx`AND parent_id = ${query.parentId}` : tx``}
      ORDER BY parent_id, order_num, dept_id`.cursor(BATCH, (rows) => {
      for (const r of rows) {
        fragments.add(`${r.head},"createTime":${time(r.create_ms)},"updateBy":${r.update_by},"updateTime":${time(r.update_ms)}`);
        ids.push(r.dept_id);
        parents.push(r.parent_id);
      }
    });
    return { version, body: kind === 'list' ? listBytes(fragments) : treeBytes(fragments, ids, parents) };
  });
}

/** Writes into a buffer of exactly the response's size. */
class Output {
  readonly buffer: Buffer;
  at = 0;
  constructor(size: number) {
    this.buffer = Buffer.allocUnsafe(size);
  }
  bytes(b: Buffer): void {
    this.at += b.copy(this.buffer, this.at);
  }
  /** The size was computed up front; a mismatch would send uninitialised memory, so it is never ignored. */
  done(): Buffer {
    if (this.at !== this.buffer.length) throw new Error(`chart size ${this.at} != ${this.buffer.length}`);
    return this.buffer;
  }
  byte(c: number): void {
    this.buffer[this.at++] = c;
  }
}

const COMMA = 0x2c;
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]

function listBytes(f: Fragments): Buffer {
  const n = f.length.length;
  const out = new Output(ENVELOPE_HEAD.length + f.bytes + n + Math.max(0, n - 1) + ENVELOPE_TAIL.length);
  out.bytes(ENVELOPE_HEAD);
  for (let i = 0; i < n; i++) {
    if (i > 0) out.byte(COMMA);
    out.at += f.copy(i, out.buffer, out.at);
    out.byte(CLOSE_OBJECT);
  }
  out.bytes(ENVELOPE_TAIL);
  return out.done();
}

function treeBytes(f: Fragments, ids: number[], parents: number[]): Buffer {
  const n = ids.length;
  const index = new Map<number, number>();
  for (let i = 0; i < n; i++) index.set(ids[i]!, i);
  // Children lists as linked indices (first child, next sibling), in row order.
  const first = new Int32Array(n).fill(-1);
  const last = new Int32Array(n).fill(-1);
  const next = new Int32Array(n).fill(-1);
  const roots: number[] = [];
  for (let i = 0; i < n; i++) {
    const p = index.get(parents[i]!);
    if (p === undefined) roots.push(i);
    else if (first[p] === -1) first[p] = last[p] = i;
    else last[p] = next[last[p]!] = i;
  }
  // Every node adds `,"children":[` and `]}`; every node but the first of its siblings a comma.
  let groups = roots.length > 0 ? 1 : 0;
  for (let i = 0; i < n; i++) if (first[i] !== -1) groups++;
  const out = new Output(ENVELOPE_HEAD.length + f.bytes + n * (CHILDREN_OPEN.length + 2) + (n - groups) + ENVELOPE_TAIL.length);
  out.bytes(ENVELOPE_HEAD);
  // Depth-first without recursion (a deep chain must not overflow the stack):
  // each frame holds a node and the next of its children to write.
  const nodes: number[] = [];
  const cursor: number[] = [];
  const open = (node: number) => {
    out.at += f.copy(node, out.buffer, out.at);
    out.bytes(CHILDREN_OPEN);
    nodes.push(node);
    cursor.push(first[node]!);
  };
  roots.forEach((root, r) => {
    if (r > 0) out.byte(COMMA);
    open(root);
    while (nodes.length > 0) {
      const top = nodes.length - 1;
      const child = cursor[top]!;
      if (child === -1) {
        out.byte(CLOSE_ARRAY);
        out.byte(CLOSE_OBJECT);
        nodes.pop();
        cursor.pop();
        continue;
      }
      if (child !== first[nodes[top]!]) out.byte(COMMA);
      cursor[top] = next[child]!;
      open(child);
    }
  });
  out.bytes(ENVELOPE_TAIL);
  return out.done();
}

// ---------------------------------------------------------------- the cache

/**
 * Serialised charts by (tenant, version, query), least recently used evicted
 * first, bounded in bytes. A chart larger than the whole budget is served
 * but not kept. Concurrent misses of one key share one build.
 */
export class ChartCache {
  /** key (tenant, query, version) -> bytes, in least-recently-used-first order. */
  private readonly entries = new Map<string, Buffer>();
  /** (tenant, query) -> the key of its one kept version: an older chart is never served again. */
  private readonly current = new Map<string, string>();
  private readonly building = new Map<string, Promise<Chart>>();
  private bytes = 0;

  constructor(readonly maxBytes: number) {}

  async get(sql: Sql, tenantId: string, version: number, kind: ChartKind, query: DeptListQuery): Promise<Chart> {
    const chart = `${tenantId}\0${queryKey(kind, query)}`;
    const key = `${chart}\0${version}`;
    const body = this.entries.get(key);
    if (body) {
      // Map order is the LRU order: move the hit to the end.
      this.entries.delete(key);
      this.entries.set(key, body);
      return { etag: chartEtag(tenantId, version, kind, query), body };
    }
    const pending = this.building.get(key);
    if (pending) return pending;
    // The chart moved on: free the old bytes before building the new ones (a big tenant's are tens of MB).
    const previous = this.current.get(chart);
    if (previous !== undefined) this.drop(previous);
    const promise = buildChart(sql, tenantId, kind, query)
      .then((built) => {
        // The snapshot may be newer than the version looked up a moment ago: label it with its own.
        this.put(chart, `${chart}\0${built.version}`, built.body);
        return { etag: chartEtag(tenantId, built.version, kind, query), body: built.body };
      })
      .finally(() => this.building.delete(key));
    this.building.set(key, promise);
    return promise;
  }

  private put(chart: string, key: string, body: Buffer): void {
    const previous = this.current.get(chart);
    if (previous !== undefined) this.drop(previous);
    if (body.length > this.maxBytes) return;
    this.entries.set(key, body);
    this.current.set(chart, key);
    this.bytes += body.length;
    for (const oldest of this.entries.keys()) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldest);
    }
  }

  private drop(key: string): void {
    const body = this.entries.get(key);
    if (!body) return;
    this.entries.delete(key);
    this.bytes -= body.length;
    const chart = key.slice(0, key.lastIndexOf('\0'));
    if (this.current.get(chart) === key) this.current.delete(chart);
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
