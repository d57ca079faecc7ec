/** What within() answers when the work did not settle in time. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * Waits for `work` at most `ms`: its value, or TIMED_OUT; its failure is
 * passed on. Every bounded wait of the service (a probe, a scrape's query, a
 * part of the shutdown) is this one helper. The work itself goes on: the
 * caller decides whether a late result matters. The timer holds the process
 * open while it runs (shutdown relies on that) and is cleared once either
 * side settles.
 */
export async function within<T>(ms: number, work: PromiseLike<T>): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), ms)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits for `work` at most `ms`, whatever its outcome: for a wait whose failure is reported elsewhere or not at all. */
export async function settledWithin(ms: number, work: PromiseLike<unknown> | null | undefined): Promise<void> {
  if (!work) return;
  await within(
    ms,
    Promise.resolve(work).catch(() => {}),
  );
}
