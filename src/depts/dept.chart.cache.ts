import type { Sql } from '../db/database.js';
import type { DeptListQuery } from './dept.schema.js';
import { cacheCounts, type CacheCounts } from '../core/cache.counts.js';
import { buildChart, chartEtag, queryKey, type Chart, type ChartKind } from './dept.chart.js';

// The charts this process has built (dept.chart.ts): one version per
// (tenant, query), within a byte budget (CHART_CACHE_MB).

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
    // The chart moved on: free the old bytes before building the new ones, so a big tenant's chart is not held twice.
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
