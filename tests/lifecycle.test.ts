import { get } from 'node:http';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { openTestDatabase } from './support/test-database.js';

// src/http/lifecycle.ts: the request deadline answers 503 for a request whose
// handler does not answer in time, except on long-lived routes (the audit
// stream), which are instead ended when the app closes. Here with a 300 ms
// deadline and two stand-in routes.

const DEADLINE_MS = 300;
let app: FastifyInstance;
let close: () => Promise<void>;

beforeAll(async () => {
  // Migrated and bootstrapped already (the run's template).
  const db = await openTestDatabase();
  app = await buildApp({
    sql: db.appSql,
    config: { jwtSecret: undefined, tokenTtl: 600, logLevel: 'silent' },
    logger: false,
    requestDeadlineMs: DEADLINE_MS,
  });
  app.get('/test/slow', { config: { public: true } }, async () => {
    await new Promise((r) => setTimeout(r, DEADLINE_MS * 4));
    return { late: true };
  });
  app.post('/test/echo', { config: { public: true } }, async (request) => request.body);
  app.post('/test/slow-after-body', { config: { public: true } }, async () => {
    await new Promise((r) => setTimeout(r, DEADLINE_MS * 4));
    return { late: true };
  });
  app.get('/test/slow-stream', { config: { public: true, longLived: true } }, async () => {
    await new Promise((r) => setTimeout(r, DEADLINE_MS * 4));
    return { late: true };
  });
  // Never ends by itself, like an SSE feed.
  app.get('/test/stream', { config: { public: true, longLived: true } }, async (_request, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
    reply.raw.write(': open\n\n');
  });
  await app.ready();
  close = async () => {
    await app.close().catch(() => {});
    await db.close();
  };
});
afterAll(async () => close?.());

describe('request deadline', () => {
  it('answers a handler that takes too long with a 503 envelope', async () => {
    const started = performance.now();
    const res = await app.inject({ method: 'GET', url: '/test/slow' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 503, data: null });
    expect(performance.now() - started).toBeLessThan(DEADLINE_MS * 4);
  });

  it('does not count the time the client takes to send its body', async () => {
    const body = Readable.from(
      (async function* () {
        yield '{"half":';
        await new Promise((r) => setTimeout(r, DEADLINE_MS * 2));
        yield '"done"}';
      })(),
    );
    const res = await app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload: body });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({ half: 'done' });
  });

  it('still answers 503 when the handler is slow after a body', async () => {
    const started = performance.now();
    const res = await app.inject({ method: 'POST', url: '/test/slow-after-body', payload: { any: 1 } });
    expect(res.statusCode).toBe(503);
    expect(performance.now() - started).toBeLessThan(DEADLINE_MS * 4);
  });

  it('leaves a long-lived route alone', async () => {
    const res = await app.inject({ method: 'GET', url: '/test/slow-stream' });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({ late: true });
  });

  it('ends open long-lived streams when the app closes', async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    let body = '';
    const ended = new Promise<void>((resolve, reject) => {
      get(`http://127.0.0.1:${port}/test/stream`, (res) => {
        res.on('data', (chunk) => (body += chunk));
        res.on('end', resolve);
      }).on('error', reject);
    });
    await expect.poll(() => body).toContain(': open');
    await app.close();
    await ended;
  });
});
