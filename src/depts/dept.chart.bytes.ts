// The chart's body as bytes: what building a chart holds while it reads the
// rows, and how the tree is nested and ordered. dept.chart.ts reads the rows
// and writes the envelope; these write the rows' JSON (dept.json.ts) into
// the chunks the cache keeps and a reply sends.

import { plainText, type PlainRow } from './dept.json.js';
import { idOrder, type Id } from '../core/ids.js';

const CHILDREN_OPEN = Buffer.from(',"children":[');
const CLOSE_NODE = Buffer.from(']}');
const COMMA = Buffer.from(',');
/** The size of the chunks a chart is written in. */
export const CHUNK_BYTES = 1 << 20;

/**
 * Free chunks of 1 MiB, for the next chart built. A big tenant's charts are
 * built again after each of its writes; the chunks of the charts they
 * replace, and a tree's scratch slabs, are handed back here and written
 * again, where they were left for V8's next full collection and each build
 * took new memory meanwhile: the process grew by about the charts' size per
 * write (docs/benchmark.md#memory-on-postgresql). Holds at most `maxFree` chunks; the rest
 * are left to the collector. A chunk must be given back only once nothing
 * reads it any more (ChartCache counts a chart's readers).
 */
export class ChunkPool {
  private readonly free: Buffer[] = [];

  constructor(private readonly maxFree: number) {}

  /** A chunk of CHUNK_BYTES bytes, or a buffer of its own for a text larger than that. */
  take(atLeast: number): Buffer {
    if (atLeast > CHUNK_BYTES) return Buffer.allocUnsafeSlow(atLeast);
    return this.free.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
  }

  /** Takes back the chunks `take` made (whole, or the part of one a chart kept); anything else is left alone. */
  give(chunks: readonly Buffer[]): void {
    for (const chunk of chunks) {
      if (this.free.length >= this.maxFree) return;
      if (chunk.byteOffset === 0 && chunk.buffer.byteLength === CHUNK_BYTES) this.free.push(Buffer.from(chunk.buffer, 0, CHUNK_BYTES));
    }
  }
}

/** For a build with no pool: every chunk new, none kept. */
const NO_POOL = new ChunkPool(0);

/**
 * The response body as UTF-8, written straight into chunks of 1 MiB as the
 * rows arrive, so building a chart holds its bytes once (the bytes the cache
 * keeps), not the rows and the bytes, or fragments and a copy.
 */
export class ChunkWriter {
  private readonly chunks: Buffer[] = [];
  private current: Buffer = Buffer.allocUnsafeSlow(0);
  private used = 0;
  bytes = 0;

  constructor(private readonly pool: ChunkPool = NO_POOL) {}

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
    else this.pool.give([this.current]);
    this.current = this.pool.take(atLeast);
    this.used = 0;
  }

  /** The chunks; the last one copied to its exact size, so a small chart holds no unused memory. */
  finish(): Buffer[] {
    if (this.used > 0) this.chunks.push(Buffer.from(this.current.subarray(0, this.used)));
    this.pool.give([this.current]);
    this.current = Buffer.allocUnsafeSlow(0);
    return this.chunks;
  }
}

/** Binary search: the first index of [0, n) where `below` is false (it is true, then false, along the range). */
function firstNotBelow(n: number, below: (i: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (below(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A typed array twice as long, its first `n` values kept. */
function grown<T extends Float64Array | Uint32Array>(a: T, n: number): T {
  const next = new (a.constructor as new (length: number) => T)(a.length * 2);
  next.set(a.subarray(0, n));
  return next;
}

/**
 * A tree's rows as they are read: each row's JSON kept as UTF-8 in 1 MiB
 * slabs (about the size of the finished tree, a fraction of what the row
 * objects or their strings would hold), and per row only its id, parent,
 * order number and where its bytes are, in typed arrays: a big JS array's
 * outgrown copies wait in V8's large-object space for a full collection
 * (some 16 MiB of them while a 100,000-department tree was built), where a
 * typed array's are freed with the young generation.
 */
export class TreeRows {
  private slabs: Buffer[] = [];
  private slab: Buffer = Buffer.allocUnsafeSlow(0);
  private used = 0;
  private count = 0;
  private ids = new Float64Array(1024);
  private parents = new Float64Array(1024);
  private orders = new Float64Array(1024);
  /** Per row: its slab, and its bytes' start and end in it. */
  private where = new Uint32Array(3 * 1024);
  /**
   * Ids above 2^53-1 (strings, docs/api-rules.md#ids), which a double cannot
   * hold exactly: each stands in the arrays as a negative code until
   * writeTo gives them, in id order, the doubles 2^53 + 2k (exact, and above
   * every other id), so sorting and matching stay on doubles.
   */
  private readonly big = new Map<string, number>();

  constructor(private readonly pool: ChunkPool = NO_POOL) {}

  add(r: PlainRow): void {
    const text = plainText(r);
    if (this.slab.length - this.used < text.length * 3) {
      this.slab = this.pool.take(text.length * 3);
      this.slabs.push(this.slab);
      this.used = 0;
    }
    const start = this.used;
    this.used += this.slab.write(text, start);
    const row = this.count++;
    if (row === this.ids.length) {
      this.ids = grown(this.ids, row);
      this.parents = grown(this.parents, row);
      this.orders = grown(this.orders, row);
      this.where = grown(this.where, 3 * row);
    }
    this.ids[row] = this.code(r.id);
    this.parents[row] = this.code(r.parent);
    this.orders[row] = r.order;
    this.where[3 * row] = this.slabs.length - 1;
    this.where[3 * row + 1] = start;
    this.where[3 * row + 2] = this.used;
  }

  private code(id: Id): number {
    if (typeof id === 'number') return id;
    let code = this.big.get(id);
    if (code === undefined) this.big.set(id, (code = -(this.big.size + 1)));
    return code;
  }

  /** The big ids' codes replaced by doubles in id order (see `big`). */
  private placeBigIds(): void {
    if (this.big.size === 0) return;
    const byCode = new Map<number, number>();
    [...this.big.keys()].sort(idOrder).forEach((id, k) => byCode.set(this.big.get(id)!, 2 ** 53 + 2 * k));
    for (const a of [this.ids, this.parents]) for (let row = 0; row < this.count; row++) if (a[row]! < 0) a[row] = byCode.get(a[row]!)!;
  }

  private bytesOf(row: number): Buffer {
    const at = row * 3;
    return this.slabs[this.where[at]!]!.subarray(this.where[at + 1], this.where[at + 2]);
  }

  /**
   * Writes the rows nested, depth first: roots (rows whose parent is not
   * live) in list order (parentId, orderNum, deptId), each node's children in
   * list order (orderNum, deptId), as tests/dept.chart.test.ts holds them
   * (toTree of listDepts, tests/support/dept-reference.ts). The rows sorted
   * once in list order make each parent's children one run, found by binary
   * search; iterative, so depth costs no stack.
   */
  writeTo(out: ChunkWriter): void {
    this.placeBigIds();
    const { ids, parents, orders, count } = this;
    const listed = new Uint32Array(count);
    for (let row = 0; row < count; row++) listed[row] = row;
    listed.sort((a, b) => parents[a]! - parents[b]! || orders[a]! - orders[b]! || ids[a]! - ids[b]!);
    const liveIds = ids.slice(0, count).sort();
    const isLive = (id: number) => {
      const at = firstNotBelow(count, (i) => liveIds[i]! < id);
      return at < count && liveIds[at] === id;
    };
    /** The first position in `listed` whose parent is `parent` or above. */
    const runOf = (parent: number) => firstNotBelow(count, (i) => parents[listed[i]!]! < parent);
    // The roots, in list order: the rows of every parent that is not live, parents ascending.
    const roots = listed.filter((row) => !isLive(parents[row]!));
    // Per open node: its children, the rows of `listed` from `next` while their parent is `parent`.
    const open: { parent: number; next: number; first: boolean }[] = [];
    const enter = (row: number) => {
      out.writeBytes(this.bytesOf(row));
      out.writeBytes(CHILDREN_OPEN);
      open.push({ parent: ids[row]!, next: runOf(ids[row]!), first: true });
    };
    for (const [k, root] of roots.entries()) {
      if (k > 0) out.writeBytes(COMMA);
      enter(root);
      while (open.length > 0) {
        const level = open[open.length - 1]!;
        if (level.next >= count || parents[listed[level.next]!] !== level.parent) {
          open.pop();
          out.writeBytes(CLOSE_NODE);
          continue;
        }
        if (!level.first) out.writeBytes(COMMA);
        level.first = false;
        enter(listed[level.next++]!);
      }
    }
    // The slabs were never sent: written out, they are free for the next build.
    this.pool.give(this.slabs);
    this.slabs = [];
    this.slab = Buffer.allocUnsafeSlow(0);
  }
}
