import { trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import type { FastifyInstance } from 'fastify';
import type { Sql } from '../db/database.js';
import type { TracesConfig } from './traces.config.js';
import { requestSpans } from './request.spans.js';
import { sqlWithSpans, type SqlTarget } from './sql.spans.js';
import { settledWithin } from '../core/timeout.js';

// OpenTelemetry traces (docs/operations.md#traces). This module is imported
// only when tracing is configured (src/main.ts, a dynamic import), so with
// tracing off not one module of the SDK is loaded.

export interface Tracing {
  /** The Fastify plugin buildApp registers first: the server span of each request. */
  plugin: (app: FastifyInstance) => Promise<void>;
  /** `sql` recording a span per statement, under the request's span. */
  withSpans(sql: Sql, target: SqlTarget): Sql;
  /** Sends what is still buffered; bounded by `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<void>;
}

function buildSampler({ sampler: name, samplerRatio }: TracesConfig): Sampler {
  const root = name.endsWith('always_off')
    ? new AlwaysOffSampler()
    : name.endsWith('traceidratio')
      ? new TraceIdRatioBasedSampler(samplerRatio)
      : new AlwaysOnSampler();
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

async function exporter(config: TracesConfig): Promise<SpanExporter> {
  const options = { url: config.url, headers: config.headers };
  if (config.protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options);
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(options);
}

export async function startTracing(config: TracesConfig): Promise<Tracing> {
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ ...config.resourceAttributes, 'service.name': config.serviceName })),
    sampler: buildSampler(config),
    spanProcessors: [new BatchSpanProcessor(await exporter(config))],
  });
  // Global context manager (AsyncLocalStorage) and propagator: the request spans read the incoming
  // traceparent through the global propagator, and the statement spans find their request through the context.
  provider.register({ propagator: new W3CTraceContextPropagator() });
  const tracer = provider.getTracer('dept-tenant-service');

  return {
    plugin: requestSpans(tracer),
    withSpans: (sql, target) => sqlWithSpans(sql, tracer, target),
    async shutdown(timeoutMs) {
      await settledWithin(timeoutMs, provider.shutdown());
      // The propagator and context manager were global; nothing else in the process uses them.
      trace.disable();
    },
  };
}
