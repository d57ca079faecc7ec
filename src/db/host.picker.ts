/**
 * docs/operations.md#failover: which of DATABASE_URL's hosts a new connection
 * dials. postgres.js is given only the first host (src/db/url.ts, driverUrl)
 * and the socket factory (src/db/socket.factory.ts) asks this picker instead: the
 * driver's own walk of a host list round-robins on every connection and, in
 * 3.4.9, never counts the hosts it has tried (porsager/postgres#1174, pull
 * request #1175), so with every host down a statement waited forever.
 *
 * A new connection dials the host the last usable connection went to. A host
 * that refuses (down, or a standby that postgres.js turns away for
 * target_session_attrs) moves the choice on to the next host. Once every host
 * has failed in a row, each further dial waits a little longer (up to 1 s), so
 * a pool waiting for a promotion does not spin.
 */
export class HostPicker {
  private current = 0;
  private failures = 0;

  constructor(private readonly count: number) {}

  pick(): { index: number; delayMs: number } {
    const rounds = Math.floor(this.failures / this.count);
    const delayMs = this.count > 1 && rounds > 0 ? Math.min(50 * 2 ** (rounds - 1), 1_000) : 0;
    return { index: this.current, delayMs };
  }

  /** Whether the connection dialled to host `index` turned out usable (it went on to run a statement). */
  report(index: number, usable: boolean): void {
    if (usable) {
      this.failures = 0;
      this.current = index;
      return;
    }
    this.failures++;
    if (index === this.current) this.current = (this.current + 1) % this.count;
  }
}
