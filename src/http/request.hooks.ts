import { randomUUID } from 'node:crypto';
import type { FastifyInstance, RawRequestDefaultExpression } from 'fastify';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:/-]{1,128}$/;

/** A client's X-Request-Id is kept when it is a plain token (it ends up in logs and headers); otherwise a new UUID. */
export function requestId(request: RawRequestDefaultExpression): string {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID();
}

/**
 * Query strings from RuoYi-style front ends send every filter, empty ones
 * included (`status=&parentId=`). An empty value means "no filter", so it is
 * dropped before validation instead of failing as an invalid number or status.
 */
export function dropEmptyQueryValues(app: FastifyInstance): void {
  // A callback hook that leaves at once without a query string: it runs on every request.
  app.addHook('preValidation', (request, _reply, done) => {
    const query = request.query as Record<string, unknown> | undefined;
    if (query && typeof query === 'object' && request.url.includes('?')) {
      for (const key of Object.keys(query)) if (query[key] === '') delete query[key];
    }
    done();
  });
}
