import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Sql } from '../db/database.js';
import { FEED_CHANNEL } from './audit.sql.js';
import { assignPositions } from './audit.sequencer.js';
import { coalesced } from '../core/coalesced.js';
import { settledWithin } from '../core/timeout.js';

// How new positions reach readers. After every write request the node runs
// the sequencer (audit.sequencer.ts assignPositions) in the background, coalesced:
// a kick schedules one run KICK_DELAY_MS later, so a burst of writes costs
// one run, not one each; at most one run at a time per node. A run
// that positions records announces it:
// - on PostgreSQL with NOTIFY, which every node LISTENs to (postgres.js
//   gives `sql.listen` its own connection), so streams on other nodes wake;
// - always through an in-process emitter, shared by every app on the same
//   `sql` (the embedded database has one connection and must not open a
//   second one for LISTEN).
// Feed reads run the sequencer themselves first, so a record committed by a
// node that died before sequencing is still served, by the next reader.

const local = new WeakMap<Sql, EventEmitter>();

function emitterFor(sql: Sql): EventEmitter {
  let emitter = local.get(sql);
  if (!emitter) {
    emitter = new EventEmitter();
    // One listener per app and per open stream hub; not a leak.
    emitter.setMaxListeners(0);
    local.set(sql, emitter);
  }
  return emitter;
}

export type NotifyMode = 'listen' | 'local';

/**
 * A busy node runs the sequencer a few times a second, not once per write
 * (each run is a commit of its own); still short against the stream's 1 s.
 */
const KICK_DELAY_MS = 200;

export class AuditFeed {
  private readonly emitter: EventEmitter;
  private scheduled: NodeJS.Timeout | null = null;
  private readonly runs = coalesced(
    async () => {
      const last = await assignPositions(this.sql);
      if (last !== null) this.emitter.emit('positions');
    },
    // The next write or feed read sequences again; nothing is lost.
    (err) => this.log.warn({ err }, 'audit sequencer run failed'),
  );
  private closed = false;
  private unlisten: (() => Promise<void>) | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly mode: NotifyMode,
    private readonly log: Pick<Logger, 'warn'>,
    /** LISTEN needs a session of its own: not through a transaction pooler (Database.direct). */
    private readonly listenSql: Sql = sql,
  ) {
    this.emitter = emitterFor(sql);
  }

  async start(): Promise<void> {
    if (this.mode !== 'listen') return;
    const { unlisten } = await this.listenSql.listen(FEED_CHANNEL, () => this.emitter.emit('positions'));
    this.unlisten = unlisten;
  }

  /** Calls `fn` whenever new positions may be readable. Returns the unsubscribe function. */
  onPositions(fn: () => void): () => void {
    this.emitter.on('positions', fn);
    return () => this.emitter.off('positions', fn);
  }

  /**
   * Positions everything committed so far, and announces it. Awaited by feed
   * reads: readers that come together share one run that began after they
   * came (coalesced's whenRun), where each ran its own, which on Citus is a
   * statement over every shard per read (docs/scale-out.md#what-it-costs).
   */
  sequence(): Promise<void> {
    return this.runs.whenRun();
  }

  /** After a write: sequence soon, in the background; kicks close together share one run. */
  kick(): void {
    if (this.closed || this.scheduled) return;
    this.scheduled = setTimeout(() => {
      this.scheduled = null;
      this.runs.run();
    }, KICK_DELAY_MS);
  }

  /** Bounded: a database that stopped answering must not hold up shutdown (closing the pool ends LISTEN anyway). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.scheduled) clearTimeout(this.scheduled);
    await settledWithin(2000, this.runs.stop());
    await settledWithin(2000, this.unlisten?.());
  }
}
