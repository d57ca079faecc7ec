// The chart's body as bytes: what building a chart holds while it reads the
// rows, and how the tree is nested and ordered. dept.chart.ts reads the rows
// and writes the envelope; these write the rows' JSON (dept.json.ts) into
// the chunks the cache keeps and a reply sends.

import { plainText, type PlainRow } from './dept.json.js';

const CHILDREN_OPEN = Buffer.from(',"children":[');
const CLOSE_NODE = Buffer.from(']}');
const COMMA = Buffer.from(',');
const CHUNK = 1 << 20;
const NONE: number[] = [];

/**
 * The response body as UTF-8, written straight into chunks of 1 MiB as the
 * rows arrive, so building a chart holds its bytes once (the bytes the cache
 * keeps), not the rows and the bytes, or fragments and a copy.
 */
export class ChunkWriter {
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

  /** Bytes already encoded (a row kept by TreeRows). */
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

/**
 * A tree's rows as they are read: each row's JSON kept as UTF-8 in 1 MiB
 * slabs (about the size of the finished tree, a fraction of what the row
 * objects or their strings would hold), and per row only its id, parent,
 * order number and where its bytes are.
 */
export class TreeRows {
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
   * Writes the rows nested, depth first: roots (rows whose parent is not
   * live) in list order (parentId, orderNum, deptId), each node's children in
   * list order (orderNum, deptId), as tests/dept.chart.test.ts holds them
   * (toTree of listDepts, tests/support/dept-reference.ts). Iterative, so
   * depth costs no stack.
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
