import { context, SpanStatusCode, trace, type Span, type SpanStatus } from '@opentelemetry/api';
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
import { FastifyOtelInstrumentation } from '@fastify/otel';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Sql } from '../db/database.js';
import type { TracesConfig } from './traces.config.js';
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

/** The request's path without its query string: a query can carry what a client searched for. */
function pathOf(request: FastifyRequest): string {
  const at = request.url.indexOf('?');
  return at < 0 ? request.url : request.url.slice(0, at);
}

const SET_STATUS = Symbol('setStatus');
type RequestSpan = Span & { [SET_STATUS]?: Span['setStatus'] };

export async function startTracing(config: TracesConfig): Promise<Tracing> {
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ ...config.resourceAttributes, 'service.name': config.serviceName })),
    sampler: buildSampler(config),
    spanProcessors: [new BatchSpanProcessor(await exporter(config))],
  });
  // Global context manager (AsyncLocalStorage) and propagator: @fastify/otel reads the incoming
  // traceparent through the global propagator, and the statement spans find their request through the context.
  provider.register({ propagator: new W3CTraceContextPropagator() });
  const tracer = provider.getTracer('dept-tenant-service');

  const instrumentation = new FastifyOtelInstrumentation({
    // One span per request: no span per hook or handler, so the statements' spans are the request span's children.
    instrumentHooks: false,
    instrumentHandler: false,
    // An exception event would carry the error's message and stack, and a message may quote input.
    recordExceptions: false,
    requestHook(span, request) {
      // The semantic conventions' name for a server span ("GET /system/dept-api/:id"), and the path without its query.
      const route = request.routeOptions.url;
      span.updateName(route === undefined ? request.method : `${request.method} ${route}`);
      span.setAttribute('url.path', pathOf(request));
      // @fastify/otel marks every error ERROR with its message, a 4xx included; here only a 5xx is an
      // error (set in onSend below), and never with the message, which may quote input.
      const own = span as RequestSpan;
      own[SET_STATUS] = span.setStatus.bind(span);
      span.setStatus = () => span;
    },
  });
  instrumentation.setTracerProvider(provider);
  const otelPlugin = instrumentation.plugin();

  // Named, so a plugin that needs the request spans can list it in its `dependencies` and Fastify checks the
  // order; it needs nothing registered before it, being registered first (src/app.ts).
  const plugin = fp(
    async (app: FastifyInstance) => {
      await app.register(otelPlugin);
      app.addHook('onRequest', (request, reply, done) => {
        const span = request.opentelemetry().span;
        if (span) {
          // Every line this request logs carries its trace (docs/operations.md#logs), the one line per request included.
          const { traceId, spanId } = span.spanContext();
          request.log = reply.log = request.log.child({ trace_id: traceId, span_id: spanId });
        }
        done();
      });
      // A body is read from the socket's events, outside the request's context: the
      // handler (and its statements) run back inside it from here on.
      app.addHook('preValidation', (request, _reply, done) => {
        const ctx = request.opentelemetry().context;
        if (ctx) context.with(ctx, done);
        else done();
      });
      app.addHook('onSend', (request, reply, payload, done) => {
        const span = request.opentelemetry().span as RequestSpan | null;
        if (span && reply.statusCode >= 500) span[SET_STATUS]?.({ code: SpanStatusCode.ERROR } satisfies SpanStatus);
        done(null, payload);
      });
    },
    { name: 'tracing' },
  );

  return {
    plugin,
    withSpans: (sql, target) => sqlWithSpans(sql, tracer, target),
    async shutdown(timeoutMs) {
      await settledWithin(timeoutMs, provider.shutdown());
      // The propagator and context manager were global; nothing else in the process uses them.
      trace.disable();
    },
  };
}
