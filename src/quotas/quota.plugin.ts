import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Sql } from '../db/database.js';
import { settledWithin } from '../core/timeout.js';
import { KEY_DAYS, purgeKeys } from './quota.idempotency.js';
import { quotaRoutes } from './quota.routes.js';

const PURGE_INTERVAL_MS = 6 * 60 * 60 * 1000;

/**
 * The quota room: its routes under /system/quota-api, and the purge of
 * Idempotency-Keys older than KEY_DAYS (at start, then every six hours, as
 * the audit trail's retention runs).
 */
export const quotaPlugin = fp(
  async (app: FastifyInstance, { sql }: { sql: Sql }) => {
    let purging: Promise<unknown> = Promise.resolve();
    const purge = () => {
      purging = purgeKeys(sql)
        .then((deleted) => deleted > 0 && app.log.info({ deleted, keptDays: KEY_DAYS }, 'idempotency keys purged'))
        .catch((err: unknown) => app.log.warn({ err }, 'idempotency key purge failed; retried at the next run'));
    };
    const purgeTimer = setInterval(purge, PURGE_INTERVAL_MS);
    purgeTimer.unref();
    app.addHook('onReady', async () => purge());
    app.addHook('onClose', async () => {
      clearInterval(purgeTimer);
      await settledWithin(2000, purging);
    });

    await app.register(quotaRoutes, { prefix: '/system/quota-api' });
  },
  { name: 'quotas', dependencies: ['@fastify/swagger', 'metrics', 'auth'] },
);
