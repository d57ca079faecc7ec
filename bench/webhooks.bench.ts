// npm run bench -- webhooks: what webhook delivery sustains and what it costs
// a write (docs/benchmark.md#webhooks), in one process on a fresh database
// (DATABASE_URL's server when set, else the embedded PGlite), against a
// loopback receiver that answers 204 at once.
//
// 1. Throughput: BENCH_WEBHOOK_EVENTS audit records are put in the feed at
//    once, then the time until every endpoint's cursor reaches the end is
//    measured, for one endpoint (deliveries to one endpoint are sequential:
//    order) and for BENCH_WEBHOOK_ENDPOINTS endpoints (delivered in parallel).
// 2. A write's cost: department creates through HTTP with no endpoint and
//    with BENCH_WEBHOOK_ENDPOINTS endpoints receiving them, in alternating
//    rounds; delivery runs off the request, so the difference is the CPU it
//    takes from the same process.

import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { buildApp } from '../src/app.js';
import { bootstrap } from '../src/bootstrap.js';
import { openEmbedded, type Database } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { parseAllowedCidrs } from '../src/webhooks/webhook.address.js';
import { openFreshPostgres } from '../tests/support/fresh-postgres.js';

const SHORT = process.env.BENCH_SHORT === '1';
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? (SHORT ? 300 : 5_000));
const ENDPOINTS = Number(process.env.BENCH_WEBHOOK_ENDPOINTS ?? 8);
const WRITES = Number(process.env.BENCH_WEBHOOK_WRITES ?? (SHORT ? 100 : 1_000));
const PASSWORD = 'bench-password-1';

/** A receiver answering 204 at once, printing its port. */
const RECEIVER = `
  const server = require('node:http').createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(204).end()); });
  server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export async function webhooks(): Promise<void> {
  const url = process.env.DATABASE_URL;
  const db: Database = url ? await openFreshPostgres(url, 'bench_webhooks', 10) : await openEmbedded(undefined);
  await migrate(db.sql);
  await bootstrap(db.sql, PASSWORD);
  // The receiver is a process of its own, as it would be in production: its CPU is not the service's.
  const receiver = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    receiver.stdout.once('data', (line: Buffer) => resolve(Number(line.toString().trim())));
    receiver.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
  });
  const target = `http://127.0.0.1:${port}/hook`;
  /** Deliveries made so far: the sum of every endpoint's attempts that got a 2xx. */
  const received = async () =>
    Number((await db.sql<{ n: string }[]>`SELECT count(*)::text AS n FROM webhook_delivery WHERE status_code BETWEEN 200 AND 299`)[0]!.n);
  const app = await buildApp({
    sql: db.sql,
    config: { jwtSecret: undefined, tokenTtl: 3600, logLevel: 'silent' },
    logger: false,
    webhooks: { allowed: parseAllowedCidrs('127.0.0.0/8'), pollMs: 100, concurrency: Math.max(16, ENDPOINTS) },
  });
  await app.ready();
  const call = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, payload?: object, token?: string) => {
    const res = await app.inject({ method, url: path, payload, headers: token ? { authorization: `Bearer ${token}` } : {} });
    if (res.statusCode !== 200) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body}`);
    return res.json().data;
  };
  const token = (await call('POST', '/auth/login', { tenantId: '000000', username: 'admin', password: PASSWORD })).access_token;
  console.log(`database: ${db.description}`);

  const endpoints = async (n: number, events: string[]) => {
    const ids: number[] = [];
    for (let i = 0; i < n; i++) ids.push((await call('POST', '/system/webhook-api', { url: target, events }, token)).id);
    return ids;
  };
  const removeAll = async (ids: number[]) => {
    for (const id of ids) await call('DELETE', `/system/webhook-api/${id}`, undefined, token);
  };

  // 1. Throughput: records written straight into the feed (a bench of delivery, not of writes).
  for (const n of [1, ENDPOINTS]) {
    const ids = await endpoints(n, ['bench.*']);
    const before = await received();
    await db.sql`
      INSERT INTO audit_log (tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, changes)
      SELECT '000000', 'bench', '000000', 'bench.event', 'dept', g::text, jsonb_build_object('n', g)
      FROM generate_series(1, ${EVENTS}) g`;
    const start = performance.now();
    await app.auditFeed.sequence();
    const expected = EVENTS * n;
    for (let done = 0; done < expected; done = (await received()) - before) {
      await new Promise((r) => setTimeout(r, 20));
      if (performance.now() - start > 600_000) throw new Error(`only ${done} of ${expected} deliveries in 10 min`);
    }
    const seconds = (performance.now() - start) / 1000;
    console.log(
      `webhook throughput: ${n} endpoint(s) x ${EVENTS} events = ${expected} deliveries in ${seconds.toFixed(2)} s: ` +
        `${Math.round(expected / seconds)} deliveries/s (${Math.round(EVENTS / seconds)} per endpoint)`,
    );
    await removeAll(ids);
  }

  // 2. A write's cost, with and without endpoints receiving it, in alternating rounds.
  const samples: Record<'with' | 'without', number[]> = { with: [], without: [] };
  const ROUNDS = 4;
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
      const ids = mode === 'with' ? await endpoints(ENDPOINTS, ['dept.*']) : [];
      for (let i = 0; i < WRITES / ROUNDS; i++) {
        const s = performance.now();
        await call('POST', '/system/dept-api', { parentId: 0, deptName: `W ${round} ${mode} ${i}` }, token);
        samples[mode].push(performance.now() - s);
      }
      // Let the deliveries of this round finish before the next round is timed.
      await new Promise((r) => setTimeout(r, 500));
      await removeAll(ids);
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const [withE, without] = [samples.with.sort((a, b) => a - b), samples.without.sort((a, b) => a - b)];
  const pct = (a: number, b: number) => `${a >= b ? '+' : ''}${(((a - b) / b) * 100).toFixed(1)}%`;
  console.log(
    `write cost: dept create, ${withE.length}+${without.length} requests: p50 ${percentile(withE, 50).toFixed(2)} vs ${percentile(without, 50).toFixed(2)} ms ` +
      `(${pct(percentile(withE, 50), percentile(without, 50))}), mean ${mean(withE).toFixed(2)} vs ${mean(without).toFixed(2)} ms ` +
      `(${pct(mean(withE), mean(without))}) with ${ENDPOINTS} endpoints receiving each create vs none`,
  );
  await app.close();
  await db.close();
  receiver.kill();
}
