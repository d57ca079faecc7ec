/**
 * Hits and misses of one cache: plain numbers the cache bumps and the metrics
 * read when scraped (docs/operations.md#metrics). lru-cache keeps no totals
 * (its `status` tells one call), so a cache counts here itself.
 */
export interface CacheCounts {
  hits: number;
  misses: number;
}

export function cacheCounts(): CacheCounts {
  return { hits: 0, misses: 0 };
}
