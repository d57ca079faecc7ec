import { defaultTextMapGetter, ROOT_CONTEXT, SpanStatusCode, type Context, type TextMapPropagator } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Sql } from '../db/database.js';
import type { RecordedSpan } from './traces.span.js';

/**
 * The server span of each request (docs/operations.md#traces), made here
 * rather than by an instrumentation library: the sampler decides first, and
 * an unsampled request gets nothing else. No attribute is built, no logger is
 * derived, and its statements run on the pool as they are; what it pays is
 * the sampler's decision and the reading of a `traceparent` header if it
 * sent one (docs/benchmark.md#cost-of-traces).
 *
 * A sampled request gets its own `request.sql` (src/http/request.database.ts),
 * which records each statement as a span under the request's span. No async
 * context is entered: on Node 20 one entered context makes every promise of
 * the process pay for its propagation, sampled or not.
 *
 * A sampled request's span carries its method, route, path and status; it
 * ends when the response has been written (or the client has gone), and it
 * is an error on a 5xx only, without a message (a message can quote input).
 */

const SPAN = Symbol('requestSpan');

declare module 'fastify' {
  interface FastifyRequest {
    [SPAN]: RecordedSpan | null;
  }
}

/** The request's path without its query string: a query can carry what a client searched for. */
function pathOf(url: string): string {
  const at = url.indexOf('?');
  return at < 0 ? url : url.slice(0, at);
}

/** Ends the request's span once, with the status it was answered with (none when the client left first). */
function end(request: FastifyRequest, reply: FastifyReply | undefined): void {
  const span = request[SPAN];
  if (span === null) return;
  request[SPAN] = null;
  if (reply) {
    span.setAttribute('http.response.status_code', reply.statusCode);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/**
 * `startSpan` starts a request's span if the sampler says so (src/traces/traces.sampling.ts);
 * `propagator` reads an incoming `traceparent`; `pool` is the database of an
 * unsampled request; `spanSql(parent)` is the pool
 * recording its statements under `parent` (src/traces/sql.spans.ts).
 */
export function requestSpans(
  startSpan: (name: string, parent: Context) => RecordedSpan | undefined,
  propagator: TextMapPropagator,
  pool: Sql,
  spanSql: (parent: RecordedSpan) => Sql,
) {
  return fp(
    async (app: FastifyInstance) => {
      app.decorateRequest(SPAN, null);

      app.addHook('onRequest', (request, reply, done) => {
        // The caller's trace, when it sent one: the span joins it, and a parent-based sampler follows its decision.
        const parent =
          request.headers.traceparent === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter);
        const route = request.routeOptions.url;
        // The semantic conventions' name for a server span: "GET /system/dept-api/:id"; an unknown route, the method.
        const span = startSpan(route === undefined ? request.method : `${request.method} ${route}`, parent);
        if (span === undefined) {
          // The pool, as the prototype has it, but as the request's own property, as a sampled request's is:
          // with an own `sql` on the sampled ones only, V8 saw two shapes of request, and with a tenth sampled
          // the other nine paid for it (docs/benchmark.md#cost-of-traces).
          request.sql = pool;
          done();
          return;
        }
        span.setAttribute('http.request.method', request.method);
        if (route !== undefined) span.setAttribute('http.route', route);
        span.setAttribute('url.path', pathOf(request.url));
        request[SPAN] = span;
        // The handler's statements, and the session lookup of the auth hook after this one, record spans under it.
        request.sql = spanSql(span);
        // Every line this request logs leads to its trace (docs/operations.md#logs), its one line per request included.
        // The request's logger made again from the root's, as Fastify made it (its `reqId`, the route's level) plus
        // the ids: a child of the request's own child would make that one a prototype, which V8 makes costly per request.
        const { traceId, spanId } = span.spanContext();
        const level = request.routeOptions.logLevel;
        const bindings = { reqId: request.id, trace_id: traceId, span_id: spanId };
        request.log = reply.log = level ? app.log.child(bindings, { level }) : app.log.child(bindings);
        done();
      });
      app.addHook('onResponse', (request, reply, done) => {
        end(request, reply);
        done();
      });
      app.addHook('onRequestAbort', (request, done) => {
        end(request, undefined);
        done();
      });
    },
    // Named, so a plugin that needs the request spans can list it in its `dependencies`; it is registered first (src/app.ts).
    { name: 'tracing' },
  );
}
