import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISCARD_MAX_BYTES, DISCARD_MAX_MS } from '../src/http/body.discard.js';
import { BODY_LIMIT_BYTES } from '../src/core/limits.js';
import { buildTestApp, type TestApp } from './support/app.js';

// docs/api-rules.md#limits: a body over 1 MiB is answered 413 with the envelope
// (docs/api-rules.md#requests-and-answers), also when the client streams it
// and reads nothing until it has sent it all. On a real socket: app.inject
// cannot show a connection reset. The uploads are paced (one 64 KiB write at
// a time, each handed to the kernel before the next) so that the server
// decides on the 413 while most of the body is still to come, as it is on
// any network slower than loopback; sent in one go, 2 MiB would sit whole in
// the loopback socket buffers before the server looked at it.

const CHUNK = 64 * 1024;
const UPLOAD = 2 * 1024 * 1024;
/** A write the server never takes in (it stopped reading) fails the upload after this long instead of hanging the test. */
const WRITE_WAIT_MS = 5_000;

let t: TestApp;
let port: number;
beforeAll(async () => {
  t = await buildTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as { port: number }).port;
});
afterAll(async () => t?.close());

interface Connection {
  socket: Socket;
  /** The first socket error (EPIPE, ECONNRESET), if any. */
  error(): string | undefined;
  /** Resolves true once the bytes are handed to the kernel, false if the socket failed or the server stopped reading. */
  write(data: string | Buffer): Promise<boolean>;
}

async function open(): Promise<Connection> {
  const socket = connect(port, '127.0.0.1');
  let error: string | undefined;
  socket.on('error', (err: NodeJS.ErrnoException) => (error ??= err.code ?? err.message));
  await once(socket, 'connect');
  const write = (data: string | Buffer) =>
    new Promise<boolean>((resolve) => {
      if (socket.destroyed) return resolve(false);
      const timer = setTimeout(() => resolve(false), WRITE_WAIT_MS);
      socket.write(data, (err) => {
        clearTimeout(timer);
        resolve(!err);
      });
    });
  return { socket, error: () => error, write };
}

const head = (framing: string) => `POST /auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`;
const chunk = (size: number) => Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), Buffer.alloc(size, 'x'), Buffer.from('\r\n')]);

/** Everything the server sends until it closes the connection (bounded); closed is false if it had not closed by then. */
async function readToClose(socket: Socket, waitMs = 5_000): Promise<{ text: string; closed: boolean }> {
  let text = '';
  socket.on('data', (data: Buffer) => (text += data.toString('latin1')));
  socket.resume();
  const closed = socket.destroyed || (await Promise.race([once(socket, 'close').then(() => true), sleep(waitMs).then(() => false)]));
  socket.destroy();
  return { text, closed };
}

function expect413(text: string) {
  const [statusLine = '', ...rest] = text.split('\r\n\r\n')[0]!.split('\r\n');
  const headers = Object.fromEntries(rest.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  expect(statusLine).toMatch(/^HTTP\/1\.1 413 /);
  expect(headers['content-type']).toMatch(/^application\/json/);
  expect(headers['x-request-id']).toBeTruthy();
  expect(headers['connection']).toBe('close');
  expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({ code: 413, msg: 'Request body is larger than 1 MiB', data: null });
}

/** Sends the whole upload, paced, reading nothing; then reads the answer. */
async function uploadThenRead(framing: 'chunked' | 'length') {
  const connection = await open();
  connection.socket.pause();
  let sent = 0;
  let ok = await connection.write(head(framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${UPLOAD}`));
  while (ok && sent < UPLOAD) {
    ok = await connection.write(framing === 'chunked' ? chunk(CHUNK) : Buffer.alloc(CHUNK, 'x'));
    if (ok) sent += CHUNK;
    await sleep(1);
  }
  if (ok && framing === 'chunked') ok = await connection.write('0\r\n\r\n');
  return { sent, ok, error: connection.error(), ...(await readToClose(connection.socket)) };
}

describe('a body over the limit, streamed by a client that reads only once it has sent it all', () => {
  it.each(['chunked', 'length'] as const)('gets the 413 envelope, then the connection closes (%s)', async (framing) => {
    const outcome = await uploadThenRead(framing);
    expect({ sent: outcome.sent, ok: outcome.ok, error: outcome.error }).toEqual({ sent: UPLOAD, ok: true, error: undefined });
    expect413(outcome.text);
    expect(outcome.closed).toBe(true);
  });

  it('leaves the service answering', async () => {
    expect((await t.anon.get('/healthz')).status).toBe(200);
  });
});

describe('what the server takes in after the 413 is bounded', () => {
  it('a Content-Length beyond what it would read is answered at once, before any of the body', async () => {
    const connection = await open();
    const started = performance.now();
    expect(await connection.write(head(`Content-Length: ${100 * 1024 * 1024}`))).toBe(true);
    const { text, closed } = await readToClose(connection.socket);
    expect413(text);
    expect(closed).toBe(true);
    expect(performance.now() - started).toBeLessThan(DISCARD_MAX_MS);
  });

  it('in bytes: an upload that never ends is cut off after about DISCARD_MAX_BYTES more', async () => {
    const connection = await open();
    connection.socket.on('data', () => {}); // reads as it goes; only the server's bound is under test
    let sent = 0;
    const started = performance.now();
    let ok = await connection.write(head('Transfer-Encoding: chunked'));
    // Far more than the bound, unpaced; the loopback buffers (a few MiB each way) hold part of it.
    while (ok && sent < 20 * DISCARD_MAX_BYTES) {
      ok = await connection.write(chunk(CHUNK));
      if (ok) sent += CHUNK;
    }
    const { closed } = await readToClose(connection.socket);
    expect(ok).toBe(false);
    expect(closed).toBe(true);
    expect(sent).toBeLessThan(BODY_LIMIT_BYTES + 4 * DISCARD_MAX_BYTES);
    expect(performance.now() - started).toBeLessThan(DISCARD_MAX_MS);
  });

  it('in time: an upload that trickles on is answered 413 and closed after DISCARD_MAX_MS', async () => {
    const connection = await open();
    let text = '';
    connection.socket.on('data', (data: Buffer) => (text += data.toString('latin1')));
    let ok = await connection.write(head('Transfer-Encoding: chunked'));
    for (let sent = 0; ok && sent <= BODY_LIMIT_BYTES; sent += CHUNK) ok = await connection.write(chunk(CHUNK));
    const overLimit = performance.now();
    while (ok && text === '' && !connection.socket.destroyed && performance.now() - overLimit < DISCARD_MAX_MS + 5_000) {
      ok = await connection.write(chunk(1));
      await sleep(100);
    }
    const answeredAfter = performance.now() - overLimit;
    const { closed } = await readToClose(connection.socket);
    expect413(text);
    expect(closed).toBe(true);
    expect(answeredAfter).toBeGreaterThanOrEqual(DISCARD_MAX_MS - 200);
    expect(answeredAfter).toBeLessThan(DISCARD_MAX_MS + 2_000);
  });
});
