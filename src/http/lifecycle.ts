import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/app.error.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A stream that stays open (the audit SSE feed): no request deadline; closed at shutdown. */
    longLived?: boolean;
  }
}

/** Comfortably inside the 10 s docs/operations.md promises, and above the statement deadline (5 s) plus a reconnect. */
export const REQUEST_DEADLINE_MS = 8_000;

declare module 'fastify' {
  interface FastifyRequest {
    /** The request deadline's clock (lifecycle.ts); null on long-lived routes. */
    deadline: Deadline | null;
  }
}

/** When a request started, and the time its body upload took (not ours to bound). */
interface Deadline {
  timer: NodeJS.Timeout;
  since: number;
  /** Start of the body upload while it runs, else -1. */
  uploadSince: number;
  uploadMs: number;
}

/**
 * Request deadline and shutdown behaviour (docs/operations.md).
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
export const lifecyclePlugin = fp<{ requestDeadlineMs: number }>(
  async (app: FastifyInstance, { requestDeadlineMs }) => {
    let closing = false;
    const streams = new Set<FastifyReply>();

    // One timer per request, armed on arrival and cleared on the answer; the body upload only moves the
    // clock's marks, and the rare timer that fires during or after an upload re-arms itself for what is left.
    // (A sweep over a map of requests in flight was tried: it kept every request reachable from an old
    // object, so requests outlived the young generation.) The state lives on the request itself.
    app.decorateRequest('deadline', null);
    const expire = (request: FastifyRequest, reply: FastifyReply) => {
      const deadline = request.deadline;
      if (reply.sent || !deadline) return;
      const now = performance.now();
      const used = (deadline.uploadSince >= 0 ? deadline.uploadSince : now) - deadline.since - deadline.uploadMs;
      if (deadline.uploadSince >= 0 || used < requestDeadlineMs) {
        deadline.timer = setTimeout(expire, Math.max(requestDeadlineMs - used, 10), request, reply);
        return;
      }
      request.log.warn('request deadline passed');
      void reply.send(new AppError(503, 'No answer in time: the database is unavailable or overloaded; retry later'));
    };

    // Callback hooks throughout: they run on every request and need no promise.
    app.addHook('onRequest', (request, reply, done) => {
      if (closing) {
        reply.header('connection', 'close');
        return done(new AppError(503, 'The service is shutting down; retry in a moment'));
      }
      if (request.routeOptions.config?.longLived) {
        streams.add(reply);
        reply.raw.once('close', () => streams.delete(reply));
      } else if (requestDeadlineMs > 0) {
        request.deadline = { timer: setTimeout(expire, requestDeadlineMs, request, reply), since: performance.now(), uploadSince: -1, uploadMs: 0 };
      }
      done();
    });
    // The time the client takes to send its body is not ours to bound: the
    // deadline pauses from the end of the onRequest hooks (token check included)
    // until the body is in, then runs on with what is left.
    app.addHook('preParsing', (request, _reply, payload, done) => {
      if (request.deadline) request.deadline.uploadSince = performance.now();
      done(null, payload);
    });
    app.addHook('preValidation', (request, _reply, done) => {
      const deadline = request.deadline;
      if (deadline && deadline.uploadSince >= 0) {
        deadline.uploadMs += performance.now() - deadline.uploadSince;
        deadline.uploadSince = -1;
      }
      done();
    });
    app.addHook('onResponse', (request, _reply, done) => {
      if (request.deadline) clearTimeout(request.deadline.timer);
      done();
    });
    app.addHook('onRequestAbort', (request, done) => {
      if (request.deadline) clearTimeout(request.deadline.timer);
      done();
    });

    // A keep-alive connection would otherwise stay open after its last answer and hold the shutdown up.
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (closing) reply.header('connection', 'close');
      done(null, payload);
    });

    app.addHook('preClose', async () => {
      closing = true;
      for (const reply of streams) reply.raw.end();
    });
  },
  { name: 'lifecycle' },
);
