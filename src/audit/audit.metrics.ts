import { Gauge, type Registry } from 'prom-client';
import type { Sql } from '../db/database.js';
import { scrapeRead } from '../metrics/scrape.read.js';
import { feedBacklog } from './audit.sql.js';

/**
 * docs/operations.md#metrics: the audit feed's backlog, read when scraped,
 * one query for both gauges; NaN when the database did not answer.
 */
export function auditFeedMetrics(registry: Registry, sql: Sql): void {
  const read = scrapeRead(() => feedBacklog(sql));
  new Gauge({
    name: 'audit_feed_unsequenced_records',
    help: 'Audit records committed and not yet given a feed position (NaN: the database did not answer)',
    registers: [registry],
    async collect() {
      this.set((await read())?.unsequenced ?? NaN);
    },
  });
  new Gauge({
    name: 'audit_feed_last_position',
    help: 'The last position the audit feed handed out (NaN: the database did not answer)',
    registers: [registry],
    async collect() {
      this.set((await read())?.lastPosition ?? NaN);
    },
  });
}
