import { performance } from 'node:perf_hooks';
import type { Sql } from '../db/database.js';
import { advance, type Attempt, type ClaimedEndpoint } from './webhook.delivery.sql.js';

// The acknowledgements of one run of an endpoint (webhook.delivery.ts):
// each 2xx is written behind the sends instead of before the next one, so
// the send loop does not wait for a statement (and its commit) after every
// delivery (docs/benchmark.md#webhooks-under-load). A 2xx is written at once
// when no write is in flight; those that come while one is in flight are
// written together when it ends, so a batch is what arrived during one
// write. Each write moves the cursor to the last record it acknowledges, logs
// the attempts and renews the lease; one is in flight at a time, in order.
//
// What a crash costs: the records whose write had not committed are sent
// again after the lease expires (at least once, with the same webhook-id):
// the one in flight, as always, and the few acknowledged during the last
// write, never more than MAX_UNWRITTEN. A replay, a PUT or a delete is seen
// at the next write, so the loop stops after at most as many more.

/** Acknowledgements not yet written, at most: the next send waits for the write in flight beyond this. */
const MAX_UNWRITTEN = 64;

export class Acks {
  private unwritten: Attempt[] = [];
  /** The position of the last record in `unwritten`. */
  private last = '';
  /** The write in flight, if any; its failure is kept for flush() to throw. */
  private writing: Promise<void> | undefined;
  private failure: unknown;
  /** False once a write found the endpoint changed under the run: stop sending. */
  goOn = true;

  constructor(
    private readonly sql: Sql,
    private readonly node: string,
    /** The run's endpoint: its cursor, URL and secrets follow each write. */
    private readonly endpoint: ClaimedEndpoint,
    private readonly leaseSeconds: number,
    /** Told when a write renewed the lease: when the renewing statement started (performance.now()). */
    private readonly renewed: (at: number) => void,
  ) {}

  /** A 2xx for the record at `position`: written now, or after the write in flight. */
  delivered(position: string, attempt: Attempt): void {
    this.unwritten.push({ ...attempt, time: new Date() });
    this.last = position;
    this.startWrite();
  }

  /** Resolves when another record may be sent: fewer than MAX_UNWRITTEN acknowledgements wait. */
  async room(): Promise<void> {
    while (this.unwritten.length >= MAX_UNWRITTEN && this.writing) await this.writing;
  }

  /** Resolves when no write is in flight (a failed one included: flush() reports it). */
  async settled(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Everything acknowledged so far, written; resolves with goOn. Throws what a write threw. */
  async flush(): Promise<boolean> {
    this.startWrite();
    await this.settled();
    if (this.failure !== undefined) throw this.failure;
    return this.goOn;
  }

  /**
   * Starts writing what is unwritten unless a write is in flight (it takes
   * them) or one failed. `writing` is cleared by a callback, which always
   * runs after this assignment, however soon the write ends.
   */
  private startWrite(): void {
    if (this.writing || this.failure !== undefined || this.unwritten.length === 0) return;
    this.writing = this.writeAll().finally(() => (this.writing = undefined));
  }

  /** Writes what is unwritten, batch after batch, until nothing is; a failure stops it (the cursor it expected never came). */
  private async writeAll(): Promise<void> {
    try {
      while (this.unwritten.length > 0) {
        const [attempts, position] = [this.unwritten, this.last];
        this.unwritten = [];
        const startedAt = performance.now();
        const now = await advance(this.sql, this.node, this.endpoint, position, attempts, this.leaseSeconds);
        if (!now?.goOn) {
          // Later batches are still logged (the endpoint may exist), but move nothing.
          this.goOn = false;
          continue;
        }
        this.renewed(startedAt);
        Object.assign(this.endpoint, { url: now.url, secrets: now.secrets, cursor: position });
      }
    } catch (err) {
      this.failure = err;
      this.goOn = false;
    }
  }
}
