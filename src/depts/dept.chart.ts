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
  const hash = createHash('sha1').update(`${tenantId}\0${queryKey(kind, query)}`).digest('base64url').slice(0, 12);
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
// route's serializer produced before), without the closing brace so a tree
// node can append its children. Times travel as epoch milliseconds and are
// formatted here, in the process time zone, like everywhere else.
const ROW_COLUMNS = (sql: Db) => sql`
  dept_id, parent_id, ancestors, dept_name, order_num, leader, phone, email, status, del_flag, tenant_id, create_by,
  (extract(epoch FROM create_time) * 1000)::float8 AS create_ms, update_by,
  (extract(epoch FROM update_time) * 1000)::float8 AS update_ms`;

interface ChartRow {
  dept_id: number;
  parent_id: number;
  ancestors: string;
  dept_name: string;
  order_num: number;
  leader: string | null;
  phone: string | null;
  email: string | null;
  status: string;
  del_flag: string;
  tenant_id: string;
  create_by: string;
  create_ms: number;
  update_by: string;
  update_ms: number | null;
}

const str = (s: string | null) => (s === null ? 'null' : JSON.stringify(s));
const time = (ms: number | null) => (ms === null ? 'null' : `"${formatDateTime(new Date(ms))}"`);

function openObject(r: ChartRow): string {
  return (
    `{"deptId":${r.dept_id},"parentId":${r.parent_id},"ancestors":${str(r.ancestors)},"deptName":${str(r.dept_name)},` +
    `"orderNum":${r.order_num},"leader":${str(r.leader)},"phone":${str(r.phone)},"email":${str(r.email)},` +
    `"status":${str(r.status)},"delFlag":${str(r.del_flag)},"tenantId":${str(r.tenant_id)},"createBy":${str(r.create_by)},` +
    `"createTime":${time(r.create_ms)},"updateBy":${str(r.update_by)},"updateTime":${time(r.update_ms)}`
  );
}

const ENVELOPE_HEAD = '{"code":200,"msg":"success","data":[';
const ENVELOPE_TAIL = ']}';
/** Rows are fetched and turned into text in batches, so a big tenant never holds all its row objects at once. */
const BATCH = 2_000;

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
    const parts: string[] = [];
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
        parts.push(openObject(r));
        ids.push(r.dept_id);
        parents.push(r.parent_id);
      }
    });
    const text = kind === 'list' ? listText(parts) : treeText(parts, ids, parents);
    return { version, body: Buffer.from(text) };
  });
}

function listText(parts: string[]): string {
  for (let i = 0; i < parts.length; i++) parts[i] += '}';
  return ENVELOPE_HEAD + parts.join(',') + ENVELOPE_TAIL;
}

function treeText(parts: string[], ids: number[], parents: number[]): string {
  const index = new Map<number, number>();
  for (let i = 0; i < ids.length; i++) index.set(ids[i]!, i);
  // Children lists as linked indices: first child and next sibling, in row order.
  const first = new Int32Array(ids.length).fill(-1);
  const last = new Int32Array(ids.length).fill(-1);
  const next = new Int32Array(ids.length).fill(-1);
  const roots: number[] = [];
  for (let i = 0; i < ids.length; i++) {
    const p = index.get(parents[i]!);
    if (p === undefined) {
      roots.push(i);
    } else if (first[p] === -1) {
      first[p] = last[p] = i;
    } else {
      next[last[p]!] = i;
      last[p] = i;
    }
  }
  // Depth-first without recursion (a deep chain must not overflow the stack):
  // each frame holds a node and the next of its children to write.
  const out: string[] = [ENVELOPE_HEAD];
  const nodes: number[] = [];
  const cursor: number[] = [];
  const open = (node: number) => {
    out.push(parts[node]!, ',"children":[');
    nodes.push(node);
    cursor.push(first[node]!);
  };
  roots.forEach((root, n) => {
    if (n > 0) out.push(',');
    open(root);
    while (nodes.length > 0) {
      const top = nodes.length - 1;
      const child = cursor[top]!;
      if (child === -1) {
        out.push(']}');
        nodes.pop();
        cursor.pop();
        continue;
      }
      if (child !== first[nodes[top]!]) out.push(',');
      cursor[top] = next[child]!;
      open(child);
    }
  });
  out.push(ENVELOPE_TAIL);
  return out.join('');
}

// ---------------------------------------------------------------- the cache

/**
 * Serialised charts by (tenant, version, query), least recently used evicted
 * first, bounded in bytes. A chart larger than the whole budget is served
 * but not kept. Concurrent misses of one key share one build.
 */
export class ChartCache {
  private readonly entries = new Map<string, Buffer>();
  private readonly building = new Map<string, Promise<Chart>>();
  private bytes = 0;

  constructor(readonly maxBytes: number) {}

  async get(sql: Sql, tenantId: string, version: number, kind: ChartKind, query: DeptListQuery): Promise<Chart> {
    const key = `${tenantId}\0${version}\0${queryKey(kind, query)}`;
    const body = this.entries.get(key);
    if (body) {
      // Map order is the LRU order: move the hit to the end.
      this.entries.delete(key);
      this.entries.set(key, body);
      return { etag: chartEtag(tenantId, version, kind, query), body };
    }
    const pending = this.building.get(key);
    if (pending) return pending;
    const promise = buildChart(sql, tenantId, kind, query)
      .then((built) => {
        // The snapshot may be newer than the version looked up a moment ago: label it with its own.
        this.put(`${tenantId}\0${built.version}\0${queryKey(kind, query)}`, built.body);
        return { etag: chartEtag(tenantId, built.version, kind, query), body: built.body };
      })
      .finally(() => this.building.delete(key));
    this.building.set(key, promise);
    return promise;
  }

  private put(key: string, body: Buffer): void {
    if (body.length > this.maxBytes) return;
    const old = this.entries.get(key);
    if (old) {
      this.bytes -= old.length;
      this.entries.delete(key);
    }
    this.entries.set(key, body);
    this.bytes += body.length;
    for (const [k, b] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= b.length;
    }
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
