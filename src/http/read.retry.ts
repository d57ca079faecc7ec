import type { FastifyInstance, RouteHandlerMethod } from 'fastify';
import { pauseBeforeRetry, worthRetrying } from '../db/retry.js';

/**
 * docs/operations.md#retries: a GET whose database connection was lost is run
 * once more (on a fresh connection: postgres.js drops a closed one from its
 * pool), after a short pause (pauseBeforeRetry), as long as nothing of its
 * answer has gone out yet. Reads change
 * nothing, so running one twice is safe; writes retry their transaction
 * instead (src/db/retry.ts).
 */
export function retryReads(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.every((method) => method === 'GET' || method === 'HEAD')) return;
    const handler = route.handler as RouteHandlerMethod;
    route.handler = async function (request, reply) {
      try {
        return await handler.call(this, request, reply);
      } catch (err) {
        if (!worthRetrying(err) || reply.sent || reply.raw.headersSent) throw err;
        request.log.warn({ err }, 'database connection lost during a read; running it once more');
        await pauseBeforeRetry();
        return handler.call(this, request, reply);
      }
    } as RouteHandlerMethod;
  });
}
