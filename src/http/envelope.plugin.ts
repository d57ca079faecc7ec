import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { ErrorEnvelope } from './envelope.schema.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Send the payload as is (OpenAPI document, docs page assets). */
    rawResponse?: boolean;
  }
}

/**
 * The one place that shapes success responses: handlers return `data`, it is
 * serialised by the route's 200 schema, and this hook wraps the serialised
 * text, so the data is never parsed or copied again. Failures (any status
 * other than 200) are sent already wrapped by the error handler.
 */
export const envelopePlugin = fp(
  async (app: FastifyInstance) => {
    app.addSchema(ErrorEnvelope);

    // Callback hooks: they run on every request and need no promise.
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id);
      done();
    });

    app.addHook('onSend', (request, reply, payload, done) => {
      if (reply.statusCode !== 200 || request.routeOptions.config?.rawResponse) return done(null, payload);
      reply.header('content-type', 'application/json; charset=utf-8');
      const data = payload === undefined || payload === null || payload === '' ? 'null' : String(payload);
      done(null, `{"code":200,"msg":"success","data":${data}}`);
    });

    app.setNotFoundHandler(async (request, reply) => {
      return reply.code(404).send({ code: 404, msg: `No route ${request.method} ${request.url.split('?')[0]}`, data: null });
    });
  },
  { name: 'envelope' },
);
