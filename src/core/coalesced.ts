/**
 * A background task that many events ask for: run now, or, when a run is
 * already going, once more right after it. Asks that come during a run share
 * that one extra run, so a burst costs two runs, not one each. A failed run is
 * handed to `onError`; the next ask runs again.
 *
 * `whenRun()` is an ask that waits: it settles once a run that began after
 * it was made has ended (with that run's error, if any). A reader that must
 * see everything done before it asked (the change feed's readers: every
 * record committed before the request) waits for such a run; readers that
 * ask together share it, where each running its own cost one run per reader.
 *
 * Not a cache (nothing is kept, no key, no value): a run-again flag that
 * lru-cache's fetch(), which shares one load per key, has no form for.
 */
export function coalesced(task: () => Promise<void>, onError: (err: unknown) => void) {
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  /** whenRun()'s callers since the last run began: the next run settles them. */
  let waiting: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  const loop = async () => {
    do {
      again = false;
      const settles = waiting;
      waiting = [];
      try {
        await task();
        for (const w of settles) w.resolve();
      } catch (err) {
        onError(err);
        for (const w of settles) w.reject(err);
      }
    } while (again && !stopped);
    running = null;
    // Stopped during a run: no run will begin for those still waiting.
    for (const w of waiting.splice(0)) w.resolve();
  };
  const ask = () => {
    if (running) again = true;
    else running = loop();
  };
  return {
    run(): void {
      if (!stopped) ask();
    },
    whenRun(): Promise<void> {
      if (stopped) return Promise.resolve();
      const settled = new Promise<void>((resolve, reject) => waiting.push({ resolve, reject }));
      ask();
      return settled;
    },
    /** No run starts after this; resolves when the one going (if any) ends. */
    stop(): Promise<void> {
      stopped = true;
      return running ?? Promise.resolve();
    },
  };
}
