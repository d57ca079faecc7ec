import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
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
  const sampler = buildSampler(config);
  const requests = new SampledFirst(sampler);
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ ...config.resourceAttributes, 'service.name': config.serviceName })),
    sampler,
    idGenerator: requests,
    spanProcessors: [new BatchSpanProcessor(await exporter(config))],
  });
  // Not registered as the process's global provider: nothing else in the process makes spans, and the
  // request's span reaches its statements through request.sql, so no context manager (on Node 20, async hooks
  // behind every promise) is installed.
  const tracer = provider.getTracer('dept-tenant-service');
  const propagator = new W3CTraceContextPropagator();

  return {
    plugin: (sql, target) => requestSpans((name, parent) => requests.start(tracer, name, parent), propagator, sqlWithSpans(sql, tracer, target)),
    async shutdown(timeoutMs) {
      await settledWithin(timeoutMs, provider.shutdown());
    },
  };
}
