import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseAllowedCidrs, type AddressRule } from '../src/outbound/outbound.address.js';
import { guardedFetch, OutboundError, RESPONSE_BODY_LIMIT_BYTES, type OutboundInit } from '../src/outbound/outbound.fetch.js';

// The fetch every outbound call other than a webhook goes through
// (docs/webhooks.md#addresses), against a loopback server of the test's own:
// loopback is not public, so it is reached only when the allow-list names it.
// No call leaves the machine: a refused address is refused before any
// connection.

const LOOPBACK: AddressRule = { allowed: parseAllowedCidrs('127.0.0.0/8') };
const PUBLIC_ONLY: AddressRule = { allowed: undefined };
const GET: OutboundInit = { method: 'GET', headers: { accept: 'application/json' }, redirect: 'manual' };
/** What the clock may add to a timeout before the rejection is seen (a loaded CI machine). */
const MARGIN_MS = 1500;

let server: http.Server;
let base: string;
/** The paths the server was asked for, in order. */
let asked: string[] = [];

function answer(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): void {
  switch (req.url) {
    case '/json':
      return void res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] }).end('{"issuer":"x"}');
    case '/echo':
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ method: req.method, headers: req.headers, body: body.toString() }));
    case '/redirect':
      return void res.writeHead(302, { location: `${base}/json` }).end();
    case '/empty':
      return void res.writeHead(204).end();
    case '/silent':
      return; // never answered
    case '/limit':
      return void res.writeHead(200, { 'content-length': RESPONSE_BODY_LIMIT_BYTES }).end(Buffer.alloc(RESPONSE_BODY_LIMIT_BYTES, 'a'));
    case '/declared-too-long':
      return void res.writeHead(200, { 'content-length': RESPONSE_BODY_LIMIT_BYTES + 1 }).end(Buffer.alloc(RESPONSE_BODY_LIMIT_BYTES + 1, 'a'));
    case '/chunked-too-long':
      // No content-length: the bound holds on the bytes as they come.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      for (let i = 0; i < 8; i++) res.write(Buffer.alloc(RESPONSE_BODY_LIMIT_BYTES / 4, 'b'));
      return void res.end();
    default:
      res.writeHead(404).end();
  }
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    asked.push(req.url ?? '');
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => answer(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
beforeEach(() => {
  asked = [];
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('guardedFetch: the address rule', () => {
  it('refuses loopback without the allow-list, before any request, for http:// and https://', async () => {
    const fetch = guardedFetch(PUBLIC_ONLY, 2000);
    await expect(fetch(`${base}/json`, GET)).rejects.toMatchObject({
      code: 'EADDRNOTALLOWED',
      message: expect.stringMatching(/is not in OUTBOUND_ALLOWED_CIDRS/),
    });
    await expect(fetch(`${base.replace('http:', 'https:')}/json`, GET)).rejects.toMatchObject({
      code: 'EADDRNOTALLOWED',
      message: expect.stringMatching(/is not public/),
    });
    expect(asked).toEqual([]);
  });

  it('refuses a name that resolves to loopback inside the lookup, without the allow-list', async () => {
    const fetch = guardedFetch(PUBLIC_ONLY, 2000);
    const port = (server.address() as AddressInfo).port;
    await expect(fetch(`http://localhost:${port}/json`, GET)).rejects.toMatchObject({
      code: 'EADDRNOTALLOWED',
      message: expect.stringMatching(/^localhost: address (127\.0\.0\.1|::1) is not in OUTBOUND_ALLOWED_CIDRS/),
    });
    expect(asked).toEqual([]);
  });

  it('refuses http:// to a public address that is not allowed, before any connection', async () => {
    const fetch = guardedFetch(LOOPBACK, 2000);
    for (const url of ['http://1.1.1.1/', 'http://[2606:4700:4700::1111]/']) {
      await expect(fetch(url, GET), url).rejects.toMatchObject({
        code: 'EADDRNOTALLOWED',
        message: expect.stringMatching(/is not in OUTBOUND_ALLOWED_CIDRS, and http:\/\/ is allowed only there/),
      });
    }
  });

  it('judges an address embedding an IPv4 one (mapped, NAT64, 6to4) as that IPv4 address', async () => {
    const fetch = guardedFetch(PUBLIC_ONLY, 2000);
    for (const url of ['https://[::ffff:7f00:1]/', 'https://[64:ff9b::a00:1]/', 'https://[2002:c0a8:101::1]/', 'https://[::ffff:169.254.169.254]/']) {
      await expect(fetch(url, GET), url).rejects.toMatchObject({ code: 'EADDRNOTALLOWED', message: expect.stringMatching(/is not public/) });
    }
    // Allowed as its IPv4 address: the loopback server answers through its IPv4-mapped spelling.
    const port = (server.address() as AddressInfo).port;
    expect((await guardedFetch(LOOPBACK, 2000)(`http://[::ffff:127.0.0.1]:${port}/json`, GET)).status).toBe(200);
  });

  it('refuses a URL that is not http(s)', async () => {
    await expect(guardedFetch(LOOPBACK, 2000)('file:///etc/passwd', GET)).rejects.toThrow(/file: is not http\(s\)/);
  });

  it('reaches an allowed address: status, every header line, body', async () => {
    const res = await guardedFetch(LOOPBACK, 2000)(`${base}/json`, GET);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.json()).toEqual({ issuer: 'x' });
    expect(asked).toEqual(['/json']);
  });

  it('sends the method, the headers and a form body as fetch would, asking for no compression', async () => {
    const form = new URLSearchParams({ grant_type: 'authorization_code', code: 'abc' });
    const res = await guardedFetch(LOOPBACK, 2000)(`${base}/echo`, {
      method: 'POST',
      headers: { authorization: 'Basic eDp5' },
      body: form,
      redirect: 'manual',
    });
    const echoed = (await res.json()) as { method: string; headers: Record<string, string>; body: string };
    expect(echoed.method).toBe('POST');
    expect(echoed.body).toBe('grant_type=authorization_code&code=abc');
    expect(echoed.headers).toMatchObject({
      authorization: 'Basic eDp5',
      'content-type': 'application/x-www-form-urlencoded;charset=UTF-8',
      'content-length': String(echoed.body.length),
      'accept-encoding': 'identity',
    });
  });

  it('answers a 204 with no body', async () => {
    const res = await guardedFetch(LOOPBACK, 2000)(`${base}/empty`, GET);
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });
});

describe('guardedFetch: what it bounds', () => {
  it('answers a redirect as it came and never follows it', async () => {
    const res = await guardedFetch(LOOPBACK, 2000)(`${base}/redirect`, GET);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`${base}/json`);
    expect(asked).toEqual(['/redirect']);
  });

  it('gives up on a server that never answers at its own timeout', { timeout: 10_000 }, async () => {
    const started = performance.now();
    const failure = await guardedFetch(LOOPBACK, 300)(`${base}/silent`, GET).catch((err: unknown) => err);
    const took = performance.now() - started;
    expect(failure).toBeInstanceOf(OutboundError);
    expect(failure).toMatchObject({ code: 'ETIMEDOUT' });
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(300 + MARGIN_MS);
  });

  it("stops when the caller's signal aborts, with the signal's reason", { timeout: 10_000 }, async () => {
    const started = performance.now();
    await expect(guardedFetch(LOOPBACK, 5000)(`${base}/silent`, { ...GET, signal: AbortSignal.timeout(200) })).rejects.toMatchObject({
      name: 'TimeoutError',
    });
    expect(performance.now() - started).toBeLessThan(200 + MARGIN_MS);
    const aborted = new AbortController();
    aborted.abort();
    await expect(guardedFetch(LOOPBACK, 5000)(`${base}/json`, { ...GET, signal: aborted.signal })).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('reads a body up to the limit, and refuses a longer one, declared or not', async () => {
    const fetch = guardedFetch(LOOPBACK, 5000);
    expect((await (await fetch(`${base}/limit`, GET)).arrayBuffer()).byteLength).toBe(RESPONSE_BODY_LIMIT_BYTES);
    for (const path of ['/declared-too-long', '/chunked-too-long']) {
      await expect(fetch(`${base}${path}`, GET), path).rejects.toMatchObject({ code: 'EBODYTOOLARGE' });
    }
    // The connection cut mid-answer is not reused: the next call still gets a whole answer.
    expect((await fetch(`${base}/json`, GET)).status).toBe(200);
  });
});
