/**
 * A background task that many events ask for: run now, or, when a run is
 * already going, once more right after it. Asks that come during a run share
 * that one extra run, so a burst costs two runs, not one each. A failed run is
 * handed to `onError`; the next ask runs again.
 *
 * Not a cache (nothing is kept, no key, no value): a run-again flag that
 * lru-cache's fetch(), which shares one load per key, has no form for.
 */
export function coalesced(task: () => Promise<void>, onError: (err: unknown) => void) {
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  return {
    run(): void {
      if (stopped) return;
      if (running) {
        again = true;
        return;
      }
      running = (async () => {
        do {
          again = false;
          try {
            await task();
          } catch (err) {
            onError(err);
          }
        } while (again && !stopped);
        running = null;
      })();
    },
    /** No run starts after this; resolves when the one going (if any) ends. */
    stop(): Promise<void> {
      stopped = true;
      return running ?? Promise.resolve();
    },
  };
}
