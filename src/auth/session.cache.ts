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
/** Far above the live sessions of one node; beyond it the oldest entries go first. */
const MAX_ENTRIES = 100_000;

export function createSessionCache<T>(ttlMs = SESSION_CACHE_MS, now: () => number = Date.now): SessionCache<T> {
  const entries = new Map<string, { value: T; expires: number }>();
  const loading = new Map<string, Promise<T | undefined>>();
  // Bumped by clear(): a load that started before a clear may have read the
  // old state, so its result is returned to its own callers but not kept.
  let generation = 0;

  return {
    get(key, load) {
      const entry = entries.get(key);
      if (entry && entry.expires > now()) return Promise.resolve(entry.value);
      if (entry) entries.delete(key);
      const pending = loading.get(key);
      if (pending) return pending;
      const started = generation;
      const expires = now() + ttlMs;
      const promise = load().then(
        (value) => {
          if (loading.get(key) === promise) loading.delete(key);
          // Only found sessions are kept: a refused token costs a read every time, as before.
          if (value !== undefined && started === generation) {
            if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
            entries.set(key, { value, expires });
          }
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
      const entry = entries.get(key);
      return entry && entry.expires > now() ? entry.value : undefined;
    },
    clear() {
      generation++;
      entries.clear();
      loading.clear();
    },
  };
}
