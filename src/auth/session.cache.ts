import { LRUCache } from 'lru-cache';

/**
 * A short-lived cache in front of the per-request session read (findSession),
 * generic over what that read returns. docs/security.md#sign-in-and-sessions allows another node 5 s
 * to refuse a revoked token, so an entry lives at most `ttlMs` (2 s by
 * default); the node where a logout, user or tenant write happens clears the
 * whole cache at once (authPlugin's onSend hook, for every route that
 * declares `changesAccess`, or clear() from code).
 * Rules evaluated against the clock (the tenant's service period) are not
 * cached: the caller checks them on every request.
 */
export interface SessionCache<T> {
  /** The cached value for `key`, or `load()`'s; concurrent misses of one key share one load. */
  get(key: string, load: () => Promise<T | undefined>): Promise<T | undefined>;
  /** The cached value for `key` when there is a live one; no load. */
  peek(key: string): T | undefined;
  /** Forgets everything, including loads already in flight. */
  clear(): void;
}

const SESSION_CACHE_MS = 2_000;
/** Far above the live sessions of one node; beyond it the least recently used entries go first. */
const MAX_ENTRIES = 100_000;

export function createSessionCache<T>(ttlMs = SESSION_CACHE_MS, now: () => number = () => performance.now()): SessionCache<T> {
  // The entries' lifetime and bound are lru-cache's. Its fetch() would share
  // concurrent loads too, but a clear() aborts the loads under way, and an
  // aborted one that found nothing rejects its callers (or, with
  // allowStaleOnFetchAbort, answers them undefined before the read is done);
  // here they get what it read, and only the keeping is skipped. So the loads
  // under way stay a map of their own.
  const entries = new LRUCache<string, { value: T }>({
    max: MAX_ENTRIES,
    ttl: ttlMs,
    // The clock read on every look-up, not once a millisecond: the tests' clock moves between two calls.
    ttlResolution: 0,
    perf: { now },
  });
  const loading = new Map<string, Promise<T | undefined>>();
  // Bumped by clear(): a load that started before a clear may have read the
  // old state, so its result is returned to its own callers but not kept.
  let generation = 0;

  return {
    get(key, load) {
      const entry = entries.get(key);
      if (entry) return Promise.resolve(entry.value);
      const pending = loading.get(key);
      if (pending) return pending;
      const started = generation;
      // The entry's lifetime counts from the read, not from its answer.
      const start = now();
      const promise = load().then(
        (value) => {
          if (loading.get(key) === promise) loading.delete(key);
          // Only found sessions are kept: a refused token costs a read every time, as before.
          if (value !== undefined && started === generation) entries.set(key, { value }, { start });
          return value;
        },
        (err: unknown) => {
          if (loading.get(key) === promise) loading.delete(key);
          throw err;
        },
      );
      loading.set(key, promise);
      return promise;
    },
    peek(key) {
      return entries.peek(key)?.value;
    },
    clear() {
      generation++;
      entries.clear();
      loading.clear();
    },
  };
}
