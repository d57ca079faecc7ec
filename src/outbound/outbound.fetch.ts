import type http from 'node:http';
import { AddressRuleError, type AddressRule } from './outbound.address.js';
import { outboundRequest, outboundUrl } from './outbound.agents.js';

// A fetch for calls to URLs the service was given (an identity provider's
// discovery document, its keys, its token endpoint), in the shape a library
// takes as its fetch (openid-client's `customFetch`). Node's global fetch has
// no hook on the connection, so the address rule could only be checked on the
// name before the request, and a name resolving elsewhere by connect time (DNS
// rebinding) would get through; this one is a node:http(s) request through
// the outbound agents, whose lookup judges the address actually connected to.
//
// What it adds to the rule: redirects are never followed (a 3xx is answered
// as it came, so a public URL cannot bounce the call to a refused address
// through a path that skips the check); one timeout from the request to the
// last byte of the body, besides the caller's signal; and a bound on the
// body read, since the answer comes from a server the caller named.

/** The most of an answer's body read; a longer answer is refused, not cut (a cut JSON document or key set would mislead). */
export const RESPONSE_BODY_LIMIT_BYTES = 1024 * 1024;

/** The bodies a library hands its fetch; a stream is refused (see requestBody). */
type OutboundBody = string | URLSearchParams | Uint8Array | ArrayBuffer | ReadableStream | null | undefined;

/** The fetch options used here: what openid-client passes its `customFetch`. */
export interface OutboundInit {
  method: string;
  headers: Record<string, string>;
  body?: OutboundBody;
  /** Only 'manual': a redirect is answered, never followed. */
  redirect: 'manual';
  signal?: AbortSignal;
}

export type OutboundFetch = (url: string, init: OutboundInit) => Promise<Response>;

/** A refusal of guardedFetch's own, told apart by `code` like a network error. */
export class OutboundError extends Error {
  constructor(
    message: string,
    readonly code: 'ETIMEDOUT' | 'EBODYTOOLARGE' | 'EADDRNOTALLOWED',
  ) {
    super(message);
  }
}

/** Statuses whose answer has no body: `new Response` refuses one for them, even an empty one. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * A fetch whose every call follows `rule` (src/outbound/outbound.address.ts)
 * and settles within `timeoutMs`. It rejects, as fetch does, on a network
 * error and with the caller's `signal.reason` when that signal aborts; with
 * an OutboundError when the address is refused, the time is up or the body
 * is longer than RESPONSE_BODY_LIMIT_BYTES. Any status is an answer.
 */
export function guardedFetch(rule: AddressRule, timeoutMs: number): OutboundFetch {
  return async (url, init) => {
    init.signal?.throwIfAborted();
    let target: URL;
    try {
      target = outboundUrl(rule, url);
    } catch (err) {
      // The same code as a name refused inside the lookup, so a caller tells both from other failures alike.
      if (err instanceof AddressRuleError) throw new OutboundError(err.message, 'EADDRNOTALLOWED');
      throw err;
    }
    const body = requestBody(init);
    return exchange(rule, target, init, body, timeoutMs);
  };
}

/**
 * The body as bytes, and the content type fetch would give it. A stream is
 * refused: no caller here sends one (a form or a JSON text at most), and one
 * would need a bound of its own.
 */
function requestBody({ method, body }: OutboundInit): { bytes: Buffer; type?: string } | undefined {
  if (body === undefined || body === null) return undefined;
  if (method === 'GET' || method === 'HEAD') throw new TypeError(`a ${method} request cannot have a body`);
  if (typeof body === 'string') return { bytes: Buffer.from(body), type: 'text/plain;charset=UTF-8' };
  if (body instanceof URLSearchParams) return { bytes: Buffer.from(body.toString()), type: 'application/x-www-form-urlencoded;charset=UTF-8' };
  if (body instanceof Uint8Array) return { bytes: Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
  if (body instanceof ArrayBuffer) return { bytes: Buffer.from(body) };
  throw new TypeError('a streamed request body is not sent: pass a string, a form or bytes');
}

/** The caller's headers, with a body's length and default type, and no compression (see below). */
function requestHeaders(init: OutboundInit, body: { bytes: Buffer; type?: string } | undefined): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = { ...init.headers };
  const named = (name: string) => Object.keys(headers).some((key) => key.toLowerCase() === name);
  if (body?.type && !named('content-type')) headers['content-type'] = body.type;
  if (body) headers['content-length'] = body.bytes.length;
  // The body is handed over as it came: asking for no encoding keeps it readable as is, and the bound on its
  // size a bound on what the caller reads, not on a compressed form of it.
  for (const key of Object.keys(headers)) if (key.toLowerCase() === 'accept-encoding') delete headers[key];
  headers['accept-encoding'] = 'identity';
  return headers;
}

/** One request and its whole answer; settles once, on the first of answer, error, timeout, abort or an over-long body. */
function exchange(rule: AddressRule, target: URL, init: OutboundInit, body: { bytes: Buffer } | undefined, timeoutMs: number): Promise<Response> {
  const { signal } = init;
  return new Promise<Response>((resolve, reject) => {
    let settled = false;
    const settle = () => {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
    };
    const fail = (err: unknown) => {
      if (settled) return;
      settle();
      reject(err);
    };
    // Destroying the request closes its socket too, so a connection with an answer half read is never reused.
    const stop = (err: unknown) => {
      fail(err);
      request.destroy();
    };

    const request = outboundRequest(rule, target, { method: init.method, headers: requestHeaders(init, body) }, (response) => {
      if (Number(response.headers['content-length']) > RESPONSE_BODY_LIMIT_BYTES) return stop(tooLong());
      const chunks: Buffer[] = [];
      let length = 0;
      response.on('data', (chunk: Buffer) => {
        length += chunk.length;
        if (length > RESPONSE_BODY_LIMIT_BYTES) return stop(tooLong());
        chunks.push(chunk);
      });
      response.on('error', fail);
      // A connection closed before the last byte: a cut body must not pass as the whole answer.
      response.on('close', () => {
        if (!response.complete) fail(new Error(`${target.host}: the connection closed before the answer was complete`));
      });
      response.on('end', () => {
        if (settled) return;
        try {
          const answer = toResponse(response, Buffer.concat(chunks));
          settle();
          resolve(answer);
        } catch (err) {
          fail(err);
        }
      });
    });
    const timer = setTimeout(() => stop(new OutboundError(`${target.host}: no complete answer within ${timeoutMs} ms`, 'ETIMEDOUT')), timeoutMs);
    const abort = () => stop(signal?.reason);
    signal?.addEventListener('abort', abort, { once: true });
    request.on('error', fail);
    request.end(body?.bytes);
  });
}

function tooLong(): OutboundError {
  return new OutboundError(`the answer is longer than ${RESPONSE_BODY_LIMIT_BYTES} bytes`, 'EBODYTOOLARGE');
}

/** The answer as a WHATWG Response: its status, every header line as sent (repeated ones too), its body. */
function toResponse(response: http.IncomingMessage, body: Buffer): Response {
  const headers = new Headers();
  for (let i = 0; i < response.rawHeaders.length; i += 2) headers.append(response.rawHeaders[i]!, response.rawHeaders[i + 1]!);
  const status = response.statusCode ?? 0;
  return new Response(NULL_BODY_STATUSES.has(status) ? null : body, { status, statusText: response.statusMessage, headers });
}
