import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from './app.error.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A stream that stays open (the audit SSE feed): no request deadline; closed at shutdown. */
    longLived?: boolean;
  }
}

/** Comfortably inside the 10 s DECISIONS §12 promises, and above the statement deadline (5 s) plus a reconnect. */
export const REQUEST_DEADLINE_MS = 8_000;

const deadlines = new WeakMap<FastifyRequest, { timer: NodeJS.Timeout; since: number; left: number }>();

function arm(request: FastifyRequest, reply: FastifyReply, ms: number): void {
  const timer = setTimeout(
    () => {
      if (reply.sent) return;
      request.log.warn('request deadline passed');
      void reply.send(new AppError(503, 'No answer in time: the database is unavailable or overloaded; retry later'));
    },
    Math.max(ms, 0),
  );
  deadlines.set(request, { timer, since: performance.now(), left: ms });
}

/**
 * Request deadline and shutdown behaviour (DECISIONS §12).
 *
 * Every request but a long-lived one is answered within `requestDeadlineMs`:
 * if its handler has not answered by then (a database that stopped
 * answering, a queue of requests behind it), the client gets a 503 envelope
 * and the handler's late result is dropped. The database deadlines
 * (src/db/deadline.ts) end the work itself; this bounds what the client waits.
 *
 * Once app.close() starts (SIGTERM), requests that still arrive on open
 * keep-alive connections get a 503 envelope, every answer from then on
 * carries `Connection: close`, and long-lived streams are ended so they do
 * not hold the shutdown up; requests already running finish.
 */
export const lifecyclePlugin = fp<{ requestDeadlineMs: number }>(async (app: FastifyInstance, { requestDeadlineMs }) => {
  let closing = false;
  const streams = new Set<FastifyReply>();

  app.addHook('onRequest', async (request, reply) => {
    if (closing) {
      reply.header('connection', 'close');
      throw new AppError(503, 'The service is shutting down; retry in a moment');
    }
    if (request.routeOptions.config?.longLived) {
      streams.add(reply);
      reply.raw.once('close', () => streams.delete(reply));
      return;
    }
    if (requestDeadlineMs > 0) arm(request, reply, requestDeadlineMs);
  });
  // The time the client takes to send its body is not ours to bound: the
  // deadline pauses from the end of the onRequest hooks (token check included)
  // until the body is in, then runs on with what is left.
  app.addHook('preParsing', async (request) => {
    const deadline = deadlines.get(request);
    if (!deadline) return;
    clearTimeout(deadline.timer);
    deadline.left -= performance.now() - deadline.since;
  });
  app.addHook('preValidation', async (request, reply) => {
    const deadline = deadlines.get(request);
    if (deadline) arm(request, reply, deadline.left);
  });
  const clear = async (request: FastifyRequest) => clearTimeout(deadlines.get(request)?.timer);
  app.addHook('onResponse', clear);
  app.addHook('onRequestAbort', clear);

  // A keep-alive connection would otherwise stay open after its last answer and hold the shutdown up.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) reply.header('connection', 'close');
    return payload;
  });

  app.addHook('preClose', async () => {
    closing = true;
    for (const reply of streams) reply.raw.end();
  });
});
