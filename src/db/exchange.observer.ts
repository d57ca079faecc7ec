/**
 * What the socket watcher (src/db/deadline.ts, src/db/exchange.reader.ts)
 * sees of one Database's connections, for the metrics
 * (docs/operations.md#metrics). It reads the protocol below postgres.js, so
 * it does not depend on the driver's internals: each Query or Sync the client sends is one exchange, answered
 * by one ReadyForQuery. A statement run with the extended protocol, a
 * BEGIN and a COMMIT are one exchange each.
 *
 * The counters are plain numbers the watcher updates; a metrics registry
 * reads them when it is scraped. Durations go to whoever listens
 * (`onAnswered`), one call per exchange and nothing else, so the cost per
 * query is two clock reads and a few additions.
 */
export class ExchangeObserver {
  /** Sockets open (connecting included). */
  open = 0;
  /** Open sockets with at least one exchange the server has not answered yet. */
  busy = 0;
  /** Exchanges sent and not answered yet, over every socket. */
  inFlight = 0;
  private readonly listeners = new Set<(seconds: number) => void>();

  /** Calls `fn` with the seconds of each answered exchange; returns the unsubscribe function. */
  onAnswered(fn: (seconds: number) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  answered(seconds: number): void {
    for (const fn of this.listeners) fn(seconds);
  }
}
