import { performance } from 'node:perf_hooks';
import type { Sql } from '../db/database.js';
import { advance, type Attempt, type ClaimedEndpoint } from './webhook.delivery.sql.js';

// The acknowledgements of one run of an endpoint (webhook.delivery.ts):
// each 2xx is kept here and written in batches, so the send loop does not
// wait for a statement (and a commit) after every delivery
// (docs/benchmark.md#webhooks-under-load). One write is in flight at a time,
// in order, while the loop goes on sending; each moves the cursor to the
// last record it acknowledges, logs the attempts and renews the lease.
//
// What a crash costs: the records delivered since the last write are sent
// again after the lease expires (at least once, with the same webhook-id),
// as an attempt in flight always was. What a replay, a PUT or a delete
// costs: the loop learns of it at the next write, so up to one batch more
// is sent from the old position before it stops.

/** A write after this many acknowledgements, or FLUSH_MS after the oldest unwritten one, whichever comes first. */
const FLUSH_RECORDS = 64;
const FLUSH_MS = 100;

export class Acks {
  private unwritten: Attempt[] = [];
  /** The position of the last record in `unwritten`. */
  private last = '';
  private oldestAt = 0;
  private writing: Promise<void> = Promise.resolve();
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

  /** A 2xx for the record at `position`; written now if the batch is full or old enough. */
  delivered(position: string, attempt: Attempt): void {
    if (this.unwritten.length === 0) this.oldestAt = performance.now();
    this.unwritten.push({ ...attempt, time: new Date() });
    this.last = position;
    if (this.unwritten.length >= FLUSH_RECORDS || performance.now() - this.oldestAt >= FLUSH_MS) this.write();
  }

  /** Everything acknowledged so far, written; resolves with goOn. Throws what the statement threw. */
  async flush(): Promise<boolean> {
    this.write();
    await this.writing;
    return this.goOn;
  }

  /** Starts a write of what is unwritten, after the one in flight. */
  private write(): void {
    if (this.unwritten.length === 0) return;
    const [attempts, position] = [this.unwritten, this.last];
    this.unwritten = [];
    // A failed write fails every later one too (the cursor it expected never came): flush() reports it.
    this.writing = this.writing.then(async () => {
      const startedAt = performance.now();
      const now = await advance(this.sql, this.node, this.endpoint, position, attempts, this.leaseSeconds);
      if (!now?.goOn) {
        this.goOn = false;
        return;
      }
      this.renewed(startedAt);
      Object.assign(this.endpoint, { url: now.url, secrets: now.secrets, cursor: position });
    });
    // Observed here so an unawaited failure is not unhandled; flush() awaits the same promise and throws.
    this.writing.catch(() => {});
  }
}
