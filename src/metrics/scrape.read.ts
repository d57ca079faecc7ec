import { TIMED_OUT, within } from '../core/timeout.js';

/** A scrape waits this long for a series' database read, so a database that is down never holds it up. */
const SCRAPE_READ_WITHIN_MS = 1_000;

/**
 * The database read behind the gauges a room adds to `app.metrics`, as the
 * gauges' collect() calls it: one query shared by all of them and by scrapes
 * that overlap, and bounded by SCRAPE_READ_WITHIN_MS. Undefined when it
 * failed or did not answer in time; the database's state shows in /readyz.
 */
export function scrapeRead<T>(read: () => Promise<T>): () => Promise<T | undefined> {
  let reading: Promise<T | undefined> | undefined;
  return () =>
    (reading ??= within(
      SCRAPE_READ_WITHIN_MS,
      read().catch(() => undefined),
    )
      .then((value) => (value === TIMED_OUT ? undefined : value))
      .finally(() => (reading = undefined)));
}
