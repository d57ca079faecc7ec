import { LRUCache } from 'lru-cache';
import type { Sql } from '../db/database.js';
import type { DeptListQuery } from './dept.schema.js';
import { cacheCounts, type CacheCounts } from '../core/cache.counts.js';
import { buildChart, chartEtag, queryKey, type Chart, type ChartKind } from './dept.chart.js';
import { CHUNK_BYTES, ChunkPool } from './dept.chart.bytes.js';

// The charts this process has built (dept.chart.ts): one version per
// (tenant, query), within a byte budget (CHART_CACHE_MB).

/** A built chart's bytes, and who still reads them. */
interface Entry {
  body: Buffer[];
  bytes: number;
  /** Requests given this body that have not yet said it is sent (Chart.release). */
  readers: number;
  /** No longer in the cache: its chunks go back to the pool once its last reader is done. */
  dropped: boolean;
}

/** A build under way: what it gives, and how many requests wait for it. */
interface Building {
  done?: Promise<Entry & { version: string }>;
  waiting: number;
}

/**
 * Serialised charts by (tenant, version, query), least recently used evicted
 * first, bounded in bytes (the order and the bound are lru-cache's, by each
 * chart's size). A chart larger than the whole budget is served but not kept.
 * Concurrent misses of one key share one build.
 *
 * A dropped chart's chunks are written again by later builds (ChunkPool),
 * so each request given a chart counts as its reader until it calls
 * `release`, and the chunks go back only when no reader is left. The count
 * is taken in the same turn the entry is found or built, so no drop can come
 * between; a reader that never releases only leaves its chunks to the
 * collector.
 */
export class ChartCache {
  /** key (tenant, query, version) -> bytes; whatever leaves it (evicted or dropped) goes through `dropped`. */
  private readonly entries: LRUCache<string, Entry>;
  /** (tenant, query) -> the key of its one kept version: an older chart is never served again. */
  private readonly current = new Map<string, string>();
  /** A build under way, and how many requests wait for it (each its reader once it is done). */
  private readonly building = new Map<string, Building>();
  constructor(
    readonly maxBytes: number,
    private readonly counts: CacheCounts = cacheCounts(),
    // Free chunks up to the budget: a tree's build needs about its size again while it orders the rows, and the
    // charts a write replaces are each up to the budget; fewer, and each round of writes left some to the collector
    // and took new ones (docs/benchmark.md#memory-on-postgresql).
    private readonly pool: ChunkPool = new ChunkPool(Math.ceil(maxBytes / CHUNK_BYTES)),
  ) {
    // lru-cache's sizes are positive: an empty chart counts one byte. Its own builds and readers are no part of an
    // LRU cache (the byte pool, the one current version per chart, the shared builds stay here); its fetch() would
    // share a build, but not count the requests waiting for it as readers in the turn it ends.
    this.entries = new LRUCache<string, Entry>({
      maxSize: Math.max(1, maxBytes),
      sizeCalculation: (entry) => Math.max(1, entry.bytes),
      dispose: (entry, key) => this.dropped(entry, key),
    });
  }

  async get(sql: Sql, tenantId: string, version: string, kind: ChartKind, query: DeptListQuery): Promise<Chart> {
    const chart = `${tenantId}\0${queryKey(kind, query)}`;
    const key = `${chart}\0${version}`;
    const found = this.entries.get(key);
    if (found) {
      this.counts.hits++;
      return this.lent(found, chartEtag(tenantId, version, kind, query));
    }
    // A chart being built is a miss too: this request waits for the database.
    this.counts.misses++;
    let pending = this.building.get(key);
    if (!pending) {
      // The chart moved on: free the old bytes before building the new ones, so a big tenant's chart is not held twice.
      const previous = this.current.get(chart);
      if (previous !== undefined) this.drop(previous);
      pending = { waiting: 0 };
      pending.done = this.build(sql, chart, key, pending, { tenantId, kind, query });
      this.building.set(key, pending);
    }
    pending.waiting++;
    const built = await pending.done!;
    // The snapshot may be newer than the version looked up a moment ago: the ETag is of its own.
    return this.lent(built, chartEtag(tenantId, built.version, kind, query), false);
  }

  /**
   * Builds and keeps the chart, its readers already counted: every request
   * waiting for it. The build is forgotten in the same turn, so no request
   * can join it after that count.
   */
  private async build(sql: Sql, chart: string, key: string, pending: Building, of: { tenantId: string; kind: ChartKind; query: DeptListQuery }) {
    try {
      const built = await buildChart(sql, of.tenantId, of.kind, of.query, this.pool);
      const entry = { body: built.body, bytes: built.bytes, readers: pending.waiting, dropped: false, version: built.version };
      this.put(chart, `${chart}\0${built.version}`, entry);
      return entry;
    } finally {
      this.building.delete(key);
    }
  }

  /** The chart as one request gets it; `count` false where its reader was counted by the build. */
  private lent(entry: Entry, etag: string, count = true): Chart {
    if (count) entry.readers++;
    let released = false;
    return {
      etag,
      body: entry.body,
      bytes: entry.bytes,
      release: () => {
        if (released) return;
        released = true;
        entry.readers--;
        this.reuse(entry);
      },
    };
  }

  private put(chart: string, key: string, entry: Entry): void {
    const previous = this.current.get(chart);
    if (previous !== undefined) this.drop(previous);
    if (entry.bytes > this.maxBytes) {
      entry.dropped = true;
      return;
    }
    // Evicts the least recently used charts past the budget, each through `dropped`.
    this.entries.set(key, entry);
    this.current.set(chart, key);
  }

  private drop(key: string): void {
    this.entries.delete(key);
  }

  /** A chart gone from the cache: no longer its chart's current version, and its chunks reused once unread. */
  private dropped(entry: Entry, key: string): void {
    const chart = key.slice(0, key.lastIndexOf('\0'));
    if (this.current.get(chart) === key) this.current.delete(chart);
    entry.dropped = true;
    this.reuse(entry);
  }

  /** A dropped chart nobody reads any more: its chunks to the pool, once. */
  private reuse(entry: Entry): void {
    if (!entry.dropped || entry.readers > 0 || entry.body.length === 0) return;
    this.pool.give(entry.body);
    entry.body = [];
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.entries.calculatedSize };
  }
}
