import type { FastifyInstance } from 'fastify';
import type { Sql } from '../db/database.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The database a request's work runs on: the pool, or, for a request
     * whose trace is sampled, the pool recording its statements as spans
     * under the request's span (src/traces/request.spans.ts). Handed to the
     * route through its request rather than found through an async context:
     * on Node 20 an async context costs every promise of the process, traced
     * or not (docs/benchmark.md#cost-of-traces).
     */
    sql: Sql;
  }
}

/** Every request's `sql`: the pool, unless tracing gives a sampled request its own. */
export function decorateRequestDatabase(app: FastifyInstance, sql: Sql): void {
  // A function (the pool is one): Fastify sets it on the requests' prototype, so
  // a request that keeps the pool costs nothing for it, with tracing on or off.
  // (Typed as a method of the request; the pool does not read `this`.)
  app.decorateRequest('sql', sql as never);
}
