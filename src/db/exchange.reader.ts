import type { ExchangeObserver } from './exchange.observer.js';

/**
 * Counts the exchanges a connection's server still owes an answer, from the
 * PostgreSQL wire messages themselves, below postgres.js: each Query ('Q') or
 * Sync ('S') the client sends is answered by exactly one ReadyForQuery ('Z').
 * postgres.js writes whole messages and may pipeline several statements.
 * Before the first ReadyForQuery (start-up, authentication) the server always
 * owes one. Over TLS the bytes cannot be read, so any answer counts as the end.
 *
 * The statement deadline (src/db/deadline.ts) asks `waiting`; with an observer
 * (docs/operations.md#metrics), each exchange after start-up is also timed
 * from its write to its ReadyForQuery: `starts` holds the send times of the
 * exchanges owed, oldest first, as they are answered in order.
 */
export class ExchangeReader {
  private owed = 0;
  private ready = false;
  /** Set at the client's first message after start-up: whether it was Terminate ('X'), i.e. the server was turned away. */
  firstAfterReady: 'query' | 'terminate' | undefined;
  /** A message header split across chunks, gathered; headerLength bytes of it so far. */
  private readonly header = Buffer.alloc(5);
  private headerLength = 0;
  /** Bytes of the current message's body still to pass over. */
  private skip = 0;
  private readonly starts: number[] = [];

  constructor(
    private readonly opaque: boolean,
    private readonly observer?: ExchangeObserver,
  ) {}

  get waiting(): boolean {
    return !this.ready || this.owed > 0;
  }

  /** The client wrote `data` (whole messages). */
  sent(data: unknown): void {
    if (this.opaque || !this.ready || !Buffer.isBuffer(data)) {
      this.owed = Math.max(this.owed, 1);
      return;
    }
    this.firstAfterReady ??= data[0] === 0x58 ? 'terminate' : 'query';
    let now = 0;
    for (let at = 0; at + 5 <= data.length; at += 1 + data.readInt32BE(at + 1)) {
      if (data[at] === 0x51 || data[at] === 0x53) {
        this.owed++;
        if (this.observer) this.started((now ||= performance.now()));
      }
    }
  }

  /** The server's bytes, as they arrive: TCP may cut them anywhere, a message header included. */
  received(chunk: Buffer): void {
    if (this.opaque) {
      this.owed = 0;
      this.ready = true;
      return;
    }
    let at = 0;
    while (at < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - at);
        this.skip -= n;
        at += n;
        continue;
      }
      // A message's header (a type byte and a length): read from the chunk when it holds all five
      // bytes, gathered byte by byte across chunks otherwise. Nothing is allocated per message: this
      // runs for every message of every statement.
      let type: number;
      let length: number;
      if (this.headerLength === 0 && at + 5 <= chunk.length) {
        type = chunk[at]!;
        length = chunk.readInt32BE(at + 1);
        at += 5;
      } else {
        while (this.headerLength < 5 && at < chunk.length) this.header[this.headerLength++] = chunk[at++]!;
        if (this.headerLength < 5) break;
        type = this.header[0]!;
        length = this.header.readInt32BE(1);
        this.headerLength = 0;
      }
      if (type === 0x5a) {
        if (this.ready && this.observer) this.answered();
        this.ready = true;
        this.owed = Math.max(0, this.owed - 1);
      }
      this.skip = length - 4;
    }
  }

  /** The socket closed: what it still owed will never be answered. */
  closed(): void {
    const observer = this.observer;
    if (!observer) return;
    observer.open--;
    if (this.starts.length > 0) observer.busy--;
    observer.inFlight -= this.starts.length;
    this.starts.length = 0;
  }

  private started(at: number): void {
    const observer = this.observer!;
    if (this.starts.length === 0) observer.busy++;
    this.starts.push(at);
    observer.inFlight++;
  }

  private answered(): void {
    const started = this.starts.shift();
    if (started === undefined) return;
    const observer = this.observer!;
    observer.inFlight--;
    if (this.starts.length === 0) observer.busy--;
    observer.answered((performance.now() - started) / 1000);
  }
}
