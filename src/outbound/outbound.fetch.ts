import { fetch as undiciFetch, type Response as UndiciResponse } from 'undici';
import { AddressRuleError, type AddressRule } from './outbound.address.js';
import { dispatcherFor, outboundUrl } from './outbound.agents.js';

// A fetch for calls to URLs the service was given (an identity provider's
// discovery document, its keys, its token endpoint), in the shape a library
// takes as its fetch (openid-client's `customFetch`). It is undici's fetch
// with the rule's agent as its dispatcher (src/outbound/outbound.agents.ts),
// whose lookup judges the address actually connected to: Node's global fetch
// has no hook on the connection, so there the rule could only be checked on
// the name before the request, and a name resolving elsewhere by connect time
// (DNS rebinding) would get through.
//
// What it adds to the rule: redirects are never followed (a 3xx is answered
// as it came, so a public URL cannot bounce the call to a refused address
// through a path that skips the check); one timeout from the request to the
// last byte of the body, besides the caller's signal; and a bound on the
// body read, since the answer comes from a server the caller named.

/** The most of an answer's body read; a longer answer is refused, not cut (a cut JSON document or key set would mislead). */
export const RESPONSE_BODY_LIMIT_BYTES = 1024 * 1024;

/** The bodies a library hands its fetch; a stream is refused (see guardedFetch). */
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
    if (init.body instanceof ReadableStream) {
      // No caller here sends one (a form or a JSON text at most), and one would need a bound of its own.
      throw new TypeError('a streamed request body is not sent: pass a string, a form or bytes');
    }
    // One signal for the whole exchange: the caller's abort (its reason as the rejection, as fetch does), the time
    // limit, an over-long body. Aborting also closes the connection, so one with an answer half read is never reused.
    const stop = new AbortController();
    const timer = setTimeout(
      () => stop.abort(new OutboundError(`${target.host}: no complete answer within ${timeoutMs} ms`, 'ETIMEDOUT')),
      timeoutMs,
    );
    const abort = () => stop.abort(init.signal?.reason);
    init.signal?.addEventListener('abort', abort, { once: true });
    try {
      const response = await undiciFetch(target, {
        method: init.method,
        headers: requestHeaders(init.headers),
        body: init.body,
        redirect: 'manual',
        signal: stop.signal,
        dispatcher: dispatcherFor(rule, target),
      }).catch((err: unknown) => {
        throw refusedInLookup(err) ?? err;
      });
      return toResponse(response, await readBody(response, stop));
    } finally {
      clearTimeout(timer);
      init.signal?.removeEventListener('abort', abort);
    }
  };
}

/** The caller's headers, asking for no compression: the body is handed over as it came, and the bound on its size a bound on what the caller reads. */
function requestHeaders(given: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(given)) if (key.toLowerCase() !== 'accept-encoding') headers[key] = value;
  headers['accept-encoding'] = 'identity';
  return headers;
}

/** fetch's "fetch failed" whose cause is the guarded lookup's refusal, as this fetch's own refusal. */
function refusedInLookup(err: unknown): OutboundError | undefined {
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause instanceof AddressRuleError ? new OutboundError(cause.message, 'EADDRNOTALLOWED') : undefined;
}

/** The whole body, refused (and the exchange stopped) past RESPONSE_BODY_LIMIT_BYTES, declared or as it comes. */
async function readBody(response: UndiciResponse, stop: AbortController): Promise<Buffer> {
  if (Number(response.headers.get('content-length')) > RESPONSE_BODY_LIMIT_BYTES) {
    stop.abort(tooLong());
    throw stop.signal.reason;
  }
  if (!response.body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    for await (const chunk of response.body) {
      length += chunk.byteLength;
      if (length > RESPONSE_BODY_LIMIT_BYTES) stop.abort(tooLong());
      if (stop.signal.aborted) break;
      chunks.push(chunk);
    }
  } catch (err) {
    // A stream errored by our own abort: the abort's reason, not the stream's wording of it.
    throw stop.signal.aborted ? stop.signal.reason : err;
  }
  if (stop.signal.aborted) throw stop.signal.reason;
  return Buffer.concat(chunks);
}

function tooLong(): OutboundError {
  return new OutboundError(`the answer is longer than ${RESPONSE_BODY_LIMIT_BYTES} bytes`, 'EBODYTOOLARGE');
}

/** The answer as the global fetch's Response (what a library compares with): its status, every header line as sent (repeated ones too), its body. */
function toResponse(response: UndiciResponse, body: Buffer): Response {
  const headers = new Headers();
  // undici's Headers yields each set-cookie line apart, as it came.
  for (const [name, value] of response.headers) headers.append(name, value);
  const { status, statusText } = response;
  return new Response(NULL_BODY_STATUSES.has(status) ? null : body, { status, statusText, headers });
}
