import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';
import type { ExchangeObserver } from '../db/exchange.observer.js';
import type { CacheCounts } from '../core/cache.counts.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's metrics, served by the management listener (src/metrics/management.server.ts). */
    metrics: Registry;
  }
}

/** The `route` label of a request no route matched: one value, so a scan of random paths cannot grow the series. */
const UNMATCHED_ROUTE = 'unmatched';

/** From half a millisecond (a cached read on a warm connection) to the statement deadline (5 s) and beyond. */
const QUERY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface MetricsSources {
  /** The socket watcher's counters of the app's Database (Database.exchanges); without them no db_* series. */
  exchanges?: ExchangeObserver;
  chartCache: CacheCounts;
  sessionCache: CacheCounts;
}

/**
 * The metrics of one app (docs/operations.md#metrics), in a Registry of its
 * own (`app.metrics`): tests build many apps in one process. Everything but
 * the request histogram is read when scraped (the database's counters, the
 * caches' counts), so serving requests costs one histogram observation each.
 * The rooms add their own series to the registry (the audit feed, the
 * webhooks), and the management listener the process metrics. Registered
 * before the routes, whose plugins name it as a dependency, so that its
 * onResponse hook times every one of them.
 */
export const metricsPlugin = fp(
  async (app: FastifyInstance, sources: MetricsSources) => {
    installMetrics(app, sources);
  },
  { name: 'metrics' },
);

function installMetrics(app: FastifyInstance, sources: MetricsSources): void {
  const registry = new Registry();
  app.decorate('metrics', registry);

  const requests = new RequestDurations();
  registry.registerMetric(requests as unknown as Metric);
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    requests.observe(request.method, request.routeOptions.url ?? UNMATCHED_ROUTE, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  cacheCounters(registry, 'chart', 'department chart (list and tree)', sources.chartCache);
  cacheCounters(registry, 'session', 'session (the per-request token check)', sources.sessionCache);
  if (sources.exchanges) databaseMetrics(app, registry, sources.exchanges);
}

/** prom-client's default buckets, which the request histogram has always had. */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  labels: { method: string; route: string; status_code: string };
  /** Observations per bucket, not cumulative; the last slot is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * http_request_duration_seconds, the one metric written on every request.
 * prom-client's Histogram validates and hashes the labels of every
 * observation, even through a labelled child, a visible part of a by-id
 * read's CPU (docs/benchmark.md#cost-of-the-metrics). Here a series is found by one Map lookup
 * and counted in an array; the exposition (registry.metrics(), through
 * get()) is prom-client's own, in the same shape as its Histogram.
 */
class RequestDurations {
  readonly name = 'http_request_duration_seconds';
  readonly help = 'Time from the request arriving to its response sent, by method, route template and status code';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series>();

  observe(method: string, route: string, statusCode: number, seconds: number): void {
    const key = `${statusCode} ${method} ${route}`;
    let series = this.series.get(key);
    if (!series) {
      series = { labels: { method, route, status_code: String(statusCode) }, counts: new Float64Array(REQUEST_BUCKETS.length + 1), sum: 0, count: 0 };
      this.series.set(key, series);
    }
    let bucket = 0;
    while (bucket < REQUEST_BUCKETS.length && seconds > REQUEST_BUCKETS[bucket]!) bucket++;
    series.counts[bucket]!++;
    series.sum += seconds;
    series.count++;
  }

  get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const { labels, counts, sum, count } of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i <= REQUEST_BUCKETS.length; i++) {
        cumulative += counts[i]!;
        values.push({
          labels: { ...labels, le: i < REQUEST_BUCKETS.length ? REQUEST_BUCKETS[i]! : '+Inf' },
          value: cumulative,
          metricName: `${this.name}_bucket`,
        });
      }
      values.push({ labels, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.series.clear();
  }
}

function cacheCounters(registry: Registry, cache: string, what: string, counts: CacheCounts): void {
  for (const outcome of ['hits', 'misses'] as const) {
    new Counter({
      name: `${cache}_cache_${outcome}_total`,
      help: `Lookups in the ${what} cache that ${outcome === 'hits' ? 'found a live entry' : 'had to read the database'}`,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(counts[outcome]);
      },
    });
  }
}

/** Read from the socket watcher's counters (src/db/exchange.observer.ts). */
function databaseMetrics(app: FastifyInstance, registry: Registry, observer: ExchangeObserver): void {
  const durations = new Histogram({
    name: 'db_query_duration_seconds',
    help: 'Time from a query (or a statement with its Sync) written to the database to its ReadyForQuery',
    buckets: QUERY_BUCKETS,
    registers: [registry],
  });
  const unsubscribe = observer.onAnswered((seconds) => durations.observe(seconds));
  app.addHook('onClose', async () => {
    unsubscribe();
  });
  new Gauge({
    name: 'db_queries_in_flight',
    help: 'Queries written to the database and not answered yet',
    registers: [registry],
    collect() {
      this.set(observer.inFlight);
    },
  });
  new Gauge({
    name: 'db_pool_connections',
    help: 'Connections to the database, busy (a query in flight) or idle',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.set({ state: 'busy' }, observer.busy);
      this.set({ state: 'idle' }, observer.open - observer.busy);
    },
  });
}
