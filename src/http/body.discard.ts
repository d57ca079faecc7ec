import type { IncomingMessage } from 'node:http';

/** At most this much of a refused body is read and thrown away before the answer. */
export const DISCARD_MAX_BYTES = 4 * 1024 * 1024;
/** And for at most this long. */
export const DISCARD_MAX_MS = 3_000;

/**
 * Reads and drops what is left of a request body that was refused before it
 * was all in (a 413: the body is over the limit), so that the answer and
 * the closing of the connection come after the client's last byte.
 *
 * Without this, the answer carries `Connection: close` and Node closes the
 * socket as soon as it is written, while the client is still sending: the
 * kernel then answers the client's next bytes with a reset, and a client
 * that reads only once it has sent everything (or whose network is slower
 * than loopback) sees ECONNRESET or EPIPE instead of the 413 envelope
 * (docs/api-rules.md#limits). The aim of a web server's lingering close.
 *
 * Bounded in bytes and time: once DISCARD_MAX_BYTES have been dropped, or
 * DISCARD_MAX_MS have passed, or the Content-Length announces more than
 * DISCARD_MAX_BYTES (then at once), it stops and the caller answers and
 * closes anyway, so a client that streams without end holds the
 * connection no longer than that. Nothing is kept: chunks are counted and
 * dropped. Only refused requests come here, never the routes' own path.
 */
export function discardRestOfBody(raw: IncomingMessage): Promise<void> {
  if (raw.readableEnded || raw.destroyed) return Promise.resolve();
  const announced = Number(raw.headers['content-length']);
  if (announced > DISCARD_MAX_BYTES) return Promise.resolve();
  return new Promise((resolve) => {
    let dropped = 0;
    const stop = () => {
      clearTimeout(timer);
      raw.off('data', onData);
      raw.off('end', stop);
      raw.off('close', stop);
      raw.off('error', stop);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > DISCARD_MAX_BYTES) stop();
    };
    const timer = setTimeout(stop, DISCARD_MAX_MS);
    raw.on('data', onData);
    raw.once('end', stop);
    raw.once('close', stop);
    raw.once('error', stop);
    raw.resume();
  });
}
