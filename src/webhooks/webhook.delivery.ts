import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { Sql } from '../db/database.js';
import { transaction } from '../db/retry.js';
import { formatDateTimeMs } from '../core/time.js';
import { coalesced } from '../core/coalesced.js';
import { retryDelayMs, type DeliveryOptions } from './webhook.options.js';
import { eventBody, pick, RecentEvents, send, type SendResult } from './webhook.send.js';
import { Acks } from './webhook.acks.js';
import {
  claimDue,
  disableEndpoint,
  pendingRecords,
  recordTestAttempt,
  signingTarget,
  release,
  scheduleRetry,
  type Attempt,
  type ClaimedEndpoint,
} from './webhook.delivery.sql.js';
import { catchUpIdle, expiredCursors, oldestRetained, purgeDeliveries } from './webhook.maintenance.sql.js';

// The delivery worker of one node (docs/webhooks.md#delivery).
//
// Order and "never lost" come from the endpoint's cursor: a record is sent,
// and only its 2xx lets the next one go and (written in batches behind the
// sends, with the attempts' log rows: webhook.acks.ts) moves the cursor past
// it. A crash before the write resends it (at least once, same webhook-id);
// nothing after a failed record is sent before it (the next waits:
// head-of-line blocking is the price of order).
//
// One delivery in flight per endpoint across nodes comes from the lease a
// node takes in the claim statement (webhook.delivery.sql.ts claimDue). A lease
// lasts the timeout plus LEASE_MARGIN_S; before each send the worker checks
// that the lease it holds outlives the send, measured from before the
// statement that set it, so a send never outlives its lease, and a node
// that died mid-delivery holds its endpoints for at most one lease.
//
// A worker wakes when the audit feed announces new positions (any node's
// writes: NOTIFY, or this process's own sequencer), and on a poll for
// retries that fall due and leases that expire. Deliveries run on this
// timer-driven loop, never on a request.

const LEASE_MARGIN_S = 10;
/** How long an attempt in flight at shutdown may still take before it is abandoned. */
const SHUTDOWN_GRACE_MS = 3000;
/** Records read from the log per round trip for one endpoint. */
const BATCH = 100;

/** Attempts by outcome, since start (this node). */
export type DeliveryCounts = { delivered: number; failed: number };

export class WebhookWorker {
  /** This process's name in leases: unique per start, so a restarted node never mistakes an old lease for its own. */
  readonly node = `${process.pid}-${randomUUID()}`;
  readonly counts: DeliveryCounts = { delivered: 0, failed: 0 };
  private readonly events = new RecentEvents();
  private readonly active = new Set<Promise<void>>();
  private readonly claims = coalesced(
    () => this.claimAndStart(),
    (err) => this.log.warn({ err }, 'webhook claim failed; retried at the next poll'),
  );
  /**
   * The timer's wake runs the feed's sequencer first: a record committed by
   * a node that died before its sequencer ran has no position, the claim sees
   * only positioned records, and nothing else positions it until the next
   * write or feed read. Cheap when every record has one (an EXISTS on the
   * unpositioned index).
   */
  private readonly polls = coalesced(
    async () => {
      try {
        await this.sequence();
      } finally {
        this.wake();
      }
    },
    (err) => this.log.warn({ err }, 'audit sequencer run failed; retried at the next poll'),
  );
  private closed = false;
  private readonly stopping = new AbortController();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly leaseSeconds: number;

  constructor(
    private readonly sql: Sql,
    private readonly options: DeliveryOptions,
    private readonly log: Pick<Logger, 'warn' | 'info'>,
    /** The audit feed's sequencer (AuditFeed.sequence): positions the records committed so far and announces them. */
    private readonly sequence: () => Promise<void> = async () => {},
  ) {
    this.leaseSeconds = Math.ceil(options.timeoutMs / 1000) + LEASE_MARGIN_S;
    // Every send in flight listens for shutdown on it: up to one per endpoint delivered at once.
    setMaxListeners(options.concurrency + 1, this.stopping.signal);
  }

  start(): void {
    const poll = setInterval(() => this.polls.run(), this.options.pollMs);
    const maintain = setInterval(() => void this.maintain(), this.options.maintenanceMs);
    poll.unref();
    maintain.unref();
    this.timers.push(poll, maintain);
    this.polls.run();
    void this.maintain();
  }

  /** Something may be due: claim and deliver; wakes close together share one claim. */
  wake(): void {
    if (!this.closed) this.claims.run();
  }

  private async claimAndStart(): Promise<void> {
    const free = this.options.concurrency - this.active.size;
    if (free <= 0) return;
    const leasedAt = performance.now();
    const claimed = await claimDue(this.sql, this.node, free, this.leaseSeconds);
    for (const endpoint of claimed) {
      const run: Promise<void> = this.deliverAll(endpoint, leasedAt)
        .catch((err: unknown) =>
          this.log.warn({ err, endpoint: endpoint.id, tenantId: endpoint.tenantId }, 'webhook delivery stopped; the lease expires and it resumes'),
        )
        .finally(() => {
          this.active.delete(run);
          // A slot is free: something else may be waiting.
          this.wake();
        });
      this.active.add(run);
    }
  }

  /** Whether the lease taken or renewed at `leasedAt` (performance.now()) outlasts one more send. */
  private leaseCovers(leasedAt: number): boolean {
    return performance.now() - leasedAt + this.options.timeoutMs < (this.leaseSeconds - 1) * 1000;
  }

  /**
   * Sends an endpoint's pending records in order until none is left, one
   * fails, or the lease is lost. The next record goes out when the one before
   * it got its 2xx; the acknowledgements are written behind the sends, in
   * batches (webhook.acks.ts), and before anything else is decided.
   */
  private async deliverAll(e: ClaimedEndpoint, leasedAt: number): Promise<void> {
    const acks = new Acks(this.sql, this.node, e, this.leaseSeconds, (at) => (leasedAt = at));
    let sent = e.cursor; // read ahead of the written cursor: the records after the last one sent
    const stop = () => acks.flush().then(() => release(this.sql, this.node, e));
    for (;;) {
      // One statement of a run at a time, as before the writes went behind the sends: a pooler's few server
      // connections are shared by every run and request.
      await acks.settled();
      const records = await pendingRecords(this.sql, { ...e, cursor: sent }, BATCH);
      if (records.length === 0) return stop();
      // Retention purged records right after the cursor while this run went on: never send past the gap
      // (maintenance disables the endpoint, "cursor expired").
      const oldest = await oldestRetained(this.sql);
      if (oldest !== null && BigInt(sent) + 1n < BigInt(oldest)) return stop();
      for (const row of records) {
        await acks.room();
        if (this.closed || !acks.goOn || !this.leaseCovers(leasedAt)) return stop();
        const { record, eventId, body } = this.events.of(row);
        const result = await send(this.options, e.url, eventId, e.secrets, body, this.stopping.signal);
        // Cut off by shutdown: not the receiver's failure; the lease goes back and the record is sent again.
        if (this.stopping.signal.aborted) return stop();
        const attempt: Attempt = { eventId, attempt: e.failures + 1, ...pick(result) };
        if (result.error === null) {
          this.counts.delivered++;
          acks.delivered(record.id, attempt);
          e.failures = 0;
          sent = record.id;
          continue;
        }
        this.counts.failed++;
        // The cursor first: the failed record is the one right after it. A run that no longer holds the endpoint leaves the failure to the next claim.
        if (!(await acks.flush())) return release(this.sql, this.node, e);
        await this.failed(e, attempt, result);
        return;
      }
    }
  }

  /** 410: disabled at once; otherwise retried on the schedule, and disabled when it is spent. */
  private async failed(e: ClaimedEndpoint, attempt: Attempt, result: SendResult): Promise<void> {
    if (result.statusCode === 410) {
      await transaction(this.sql, (tx) => disableEndpoint(tx, e, '410 Gone', { node: this.node, attempt }));
      this.log.warn({ endpoint: e.id, tenantId: e.tenantId }, 'webhook endpoint answered 410 Gone: disabled');
      return;
    }
    const delay = retryDelayMs(this.options.retrySchedule, attempt.attempt, result.retryAfterSeconds);
    if (delay === undefined) {
      await transaction(this.sql, (tx) => disableEndpoint(tx, e, 'retries exhausted', { node: this.node, attempt }));
      this.log.warn({ endpoint: e.id, tenantId: e.tenantId, attempts: attempt.attempt }, 'webhook endpoint failed every retry: disabled');
      return;
    }
    await scheduleRetry(this.sql, this.node, e, attempt, delay);
  }

  /**
   * POST /{id}/test: one `webhook.test` event, sent now, outside the queue
   * (the cursor does not move), logged with the other attempts.
   */
  async test(tenantId: string, id: number): Promise<SendResult | undefined> {
    const target = await signingTarget(this.sql, tenantId, id);
    if (!target) return undefined;
    const eventId = `test_${randomUUID()}`;
    const now = new Date();
    const body = eventBody('webhook.test', now, { endpointId: id, tenantId, time: formatDateTimeMs(now) });
    const result = await send(this.options, target.url, eventId, target.secrets, body);
    await recordTestAttempt(this.sql, tenantId, id, { eventId, attempt: 1, ...pick(result) });
    return result;
  }

  /** Idle cursors up to the end of the feed, expired cursors disabled, old attempt logs dropped. */
  async maintain(): Promise<void> {
    if (this.closed) return;
    try {
      await catchUpIdle(this.sql);
      for (const e of await expiredCursors(this.sql)) {
        await transaction(this.sql, (tx) => disableEndpoint(tx, e, 'cursor expired', 'maintenance'));
        this.log.warn({ endpoint: e.id, tenantId: e.tenantId }, 'webhook endpoint missed records that retention purged: disabled (cursor expired)');
      }
      await purgeDeliveries(this.sql);
    } catch (err) {
      this.log.warn({ err }, 'webhook maintenance failed; retried at the next run');
    }
  }

  /**
   * At the start of shutdown (before the HTTP server drains): no new claims
   * or sends. An attempt in flight gets SHUTDOWN_GRACE_MS to be answered (an
   * answered one is recorded, so it is not sent twice); one still waiting
   * then is abandoned, so a slow receiver never holds up the exit, and its
   * record is sent again after the restart (at least once).
   */
  stopClaiming(): void {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    setTimeout(() => this.stopping.abort(), SHUTDOWN_GRACE_MS).unref();
  }

  /** Stops (stopClaiming), then waits for the runs in flight to record their attempts and give their leases back. */
  async close(): Promise<void> {
    this.stopClaiming();
    await this.polls.stop();
    await this.claims.stop();
    await Promise.allSettled([...this.active]);
  }
}
