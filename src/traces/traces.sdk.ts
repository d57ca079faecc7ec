import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { FastifyInstance } from 'fastify';
import type { Sql } from '../db/database.js';
import type { TracesConfig } from './traces.config.js';
import { requestSpans } from './request.spans.js';
import { sqlWithSpans, type SqlTarget } from './sql.spans.js';
import { buildSampler, SampledFirst } from './traces.sampling.js';
import { settledWithin } from '../core/timeout.js';

// OpenTelemetry traces (docs/operations.md#traces). This module is imported
// only when tracing is configured (src/main.ts, a dynamic import), so with
// tracing off not one module of the SDK is loaded.

export interface Tracing {
  /**
   * The Fastify plugin buildApp registers first: the server span of each
   * request, and for a sampled one, `sql` recording a span per statement under it.
   */
  plugin(sql: Sql, target: SqlTarget): (app: FastifyInstance) => Promise<void>;
  /** Sends what is still buffered; bounded by `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<void>;
}

async function exporter(config: TracesConfig): Promise<SpanExporter> {
  const options = { url: config.url, headers: config.headers };
  if (config.protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options);
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(options);
}

export async function startTracing(config: TracesConfig): Promise<Tracing> {
  // The SDK's batch processor (it reads OTEL_BSP_* itself) and OTLP exporter, fed the service's own spans
  // (src/traces/traces.span.ts): no tracer provider, no context manager, nothing made global. Nothing else
  // in the process makes spans, and a request's span reaches its statements through request.sql.
  const processor = new BatchSpanProcessor(await exporter(config));
  const requests = new SampledFirst(buildSampler(config), {
    processor,
    resource: defaultResource().merge(resourceFromAttributes({ ...config.resourceAttributes, 'service.name': config.serviceName })),
    scope: { name: 'dept-tenant-service' },
  });
  const propagator = new W3CTraceContextPropagator();

  return {
    plugin: (sql, target) => requestSpans((name, parent) => requests.start(name, parent), propagator, sql, sqlWithSpans(sql, target)),
    async shutdown(timeoutMs) {
      await settledWithin(timeoutMs, processor.shutdown());
    },
  };
}
