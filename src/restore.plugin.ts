import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Sql } from './db/database.js';
import { RESTORED_CHANNEL } from './db/backup.js';
import { settledWithin } from './core/timeout.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Drops what this node keeps of the data beyond its versions: called when a restore replaced the data under it. */
    dataReplaced(): void;
  }
}

/**
 * After a restore (docs/operations.md#backup-and-restore) the data under the
 * service is not what its caches saw. The chart and tenant-page caches are
 * keyed by versions that the restore moves past every value used before
 * (src/db/backup.ts); the session cache is keyed by token, so it is dropped:
 * on the node that ran the restore (the embedded service, asked through its
 * control socket) at once, on every node sharing a PostgreSQL by NOTIFY.
 * Without LISTEN (one connection, the embedded database) only the first.
 */
export const restorePlugin = fp(
  async (app: FastifyInstance, opts: { sql: Sql; listenSql: Sql }) => {
    app.decorate('dataReplaced', () => {
      app.sessionCache.clear();
      app.log.info('data replaced by a restore: session cache dropped');
    });
    if (opts.sql.options.max <= 1) return;
    const { unlisten } = await opts.listenSql.listen(RESTORED_CHANNEL, () => app.dataReplaced());
    // Bounded like the audit feed's: closing the pool ends LISTEN anyway.
    app.addHook('onClose', () => settledWithin(2000, unlisten()));
  },
  { name: 'restore', dependencies: ['auth'] },
);
