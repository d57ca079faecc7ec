import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Sql } from '../db/database.js';
import type { Caller } from '../identity/caller.js';
import { AuditFeed, type NotifyMode } from './audit.feed.js';
import { settledWithin } from '../core/timeout.js';
import { auditRoutes } from './audit.routes.js';
import { purgeAudit } from './audit.retention.js';
import { AuditStreams, STREAM_DEFAULTS, type StreamOptions } from './audit.stream.js';
import { auditFeedMetrics } from './audit.metrics.js';

export interface AuditOptions {
  /** Records older than this many days are purged (AUDIT_RETENTION_DAYS). */
  retentionDays?: number;
  /**
   * 'listen': PostgreSQL LISTEN/NOTIFY reaches every node; 'local': this
   * process only (the embedded database, which has a single connection).
   * Default: 'local' for a one-connection pool, else 'listen'.
   */
  notify?: NotifyMode;
  /** Stream internals; tests shorten the heartbeat and the buffer bound. */
  stream?: Partial<StreamOptions>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The open audit streams of this node (their count is worth a metric). */
    auditStreams: AuditStreams;
    /** The feed's sequencer and its announcements (the webhook worker wakes on them). */
    auditFeed: AuditFeed;
  }
}

const PURGE_INTERVAL_MS = 6 * 60 * 60 * 1000;

/**
 * The audit room: its routes under /system/audit-api, the sequencer kick
 * after every write request, the streams (ended before the server closes,
 * so followers never hold up shutdown), retention (at start, then every
 * six hours) and the feed's gauges.
 */
export const auditPlugin = fp(
  async (app: FastifyInstance, opts: { sql: Sql; listenSql?: Sql; audit?: AuditOptions; sessionIsLive: (viewer: Caller) => Promise<boolean> }) => {
    const { sql } = opts;
    const options = opts.audit ?? {};
    const notify = options.notify ?? (sql.options.max > 1 ? 'listen' : 'local');
    const feed = new AuditFeed(sql, notify, app.log, opts.listenSql ?? sql);
    await feed.start();
    const streams = new AuditStreams(sql, feed, { ...STREAM_DEFAULTS, ...options.stream }, app.log, opts.sessionIsLive);
    app.decorate('auditStreams', streams);
    app.decorate('auditFeed', feed);
    auditFeedMetrics(app.metrics, sql);

    // Records are written with no position; give them one once the request's transaction has committed.
    app.addHook('onResponse', (request, _reply, done) => {
      if (request.method !== 'GET' && request.method !== 'HEAD') feed.kick();
      done();
    });

    const retentionDays = options.retentionDays ?? 365;
    let purging: Promise<unknown> = Promise.resolve();
    const purge = () => {
      purging = purgeAudit(sql, retentionDays)
        .then((deleted) => deleted > 0 && app.log.info({ deleted, retentionDays }, 'audit records purged'))
        .catch((err: unknown) => app.log.warn({ err }, 'audit purge failed; retried at the next run'));
    };
    const purgeTimer = setInterval(purge, PURGE_INTERVAL_MS);
    purgeTimer.unref();
    app.addHook('onReady', async () => purge());

    app.addHook('preClose', async () => streams.close());
    app.addHook('onClose', async () => {
      clearInterval(purgeTimer);
      await settledWithin(2000, purging);
      await feed.close();
    });

    await app.register(auditRoutes, { feed, streams, prefix: '/system/audit-api' });
  },
  // Its gauges go to the metrics' registry; its routes need what every resource's do.
  { name: 'audit', dependencies: ['@fastify/swagger', 'metrics', 'auth'] },
);
