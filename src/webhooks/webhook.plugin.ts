import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import type { Sql } from '../db/database.js';
import { scrapeRead } from '../metrics/scrape.read.js';
import type { AddressRule } from '../outbound/outbound.address.js';
import { WebhookWorker } from './webhook.delivery.js';
import { backlogs } from './webhook.maintenance.sql.js';
import { DELIVERY_DEFAULTS, type DeliveryOptions } from './webhook.options.js';
import { webhookRoutes } from './webhook.routes.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** This node's webhook delivery worker. */
    webhooks: WebhookWorker;
  }
}

export type WebhookOptions = Partial<DeliveryOptions>;

/**
 * The webhook room: routes under /system/webhook-api, and this node's
 * delivery worker, woken by the audit feed (a change on any node) and
 * stopped before the database closes. It reads the feed the audit plugin
 * decorates the app with, which Fastify checks is registered first.
 */
export const webhookPlugin = fp(
  async (app: FastifyInstance, opts: { sql: Sql; webhooks?: WebhookOptions }) => {
    const feed = app.auditFeed;
    const options: DeliveryOptions = { ...DELIVERY_DEFAULTS, allowed: undefined, ...opts.webhooks };
    const worker = new WebhookWorker(opts.sql, options, app.log, () => feed.sequence());
    app.decorate('webhooks', worker);
    const stopListening = feed.onPositions(() => worker.wake());
    app.addHook('onReady', async () => worker.start());
    app.addHook('preClose', async () => worker.stopClaiming());
    app.addHook('onClose', async () => {
      stopListening();
      await worker.close();
    });
    webhookMetrics(app, opts.sql, worker);
    const rule: AddressRule = options;
    await app.register(webhookRoutes, { worker, rule, feed, prefix: '/system/webhook-api' });
  },
  { name: 'webhooks', dependencies: ['audit', 'metrics'], decorators: { fastify: ['auditFeed', 'metrics'] } },
);

/** docs/operations.md#metrics: per endpoint its backlog, lag and failed attempts (read when scraped), and this node's attempts. */
function webhookMetrics(app: FastifyInstance, sql: Sql, worker: WebhookWorker): void {
  for (const outcome of ['delivered', 'failed'] as const) {
    new Counter({
      name: `webhook_attempts_${outcome}_total`,
      help: `Webhook delivery attempts by this node that ${outcome === 'delivered' ? 'got a 2xx' : 'did not (status, timeout, refused address)'}`,
      registers: [app.metrics],
      collect() {
        this.reset();
        this.inc(worker.counts[outcome]);
      },
    });
  }
  const read = scrapeRead(() => backlogs(sql));
  const labelNames = ['tenant_id', 'endpoint'] as const;
  // One gauge per figure of the same read: every endpoint's row, read once per scrape.
  const gauges = [
    ['webhook_endpoint_backlog', 'Records waiting for an enabled webhook endpoint (counted up to 10,000)', 'backlog'],
    [
      'webhook_endpoint_lag_seconds',
      'Seconds since the oldest record an enabled webhook endpoint has not received yet was written (0: nothing waiting)',
      'lag',
    ],
    ['webhook_endpoint_failures', 'Failed attempts so far at the record an enabled endpoint is blocked on (0: delivering normally)', 'failures'],
  ] as const;
  for (const [name, help, figure] of gauges) {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [app.metrics],
      async collect() {
        this.reset();
        for (const e of (await read()) ?? []) this.set({ tenant_id: e.tenantId, endpoint: String(e.id) }, e[figure]);
      },
    });
  }
}
