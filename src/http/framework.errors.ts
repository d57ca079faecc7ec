import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

// Two kinds of failure happen before any route or hook runs, and Fastify
// answers them in its own shape unless told otherwise. Both get the envelope
// and an X-Request-Id like every other response (docs/api-rules.md#requests-and-answers).

/** Router-level errors, such as a path with a broken percent-escape (`/x/%E0%A4%A`). */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const msg = error.code === 'FST_ERR_BAD_URL' ? 'The request path contains an invalid percent-escape' : 'The request could not be routed';
  void reply.code(400).header('x-request-id', request.id).send({ code: 400, msg, data: null });
}

/**
 * Errors of Node's HTTP parser (headers or URL over 16 KiB, broken chunked
 * encoding, conflicting lengths, unknown methods): there is no request
 * object yet, so the envelope is written to the socket directly.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, msg] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'The request headers or URL are larger than 16 KiB']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'The request took too long to arrive']
        : [400, 'Malformed HTTP request'];
  const body = JSON.stringify({ code: status, msg, data: null });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${randomUUID()}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}
