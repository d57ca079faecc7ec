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
// 3. Under load: the built service as a process under a steady mix of reads
//    and renames, one endpoint and then BENCH_WEBHOOK_ENDPOINTS receiving
//    every change: deliveries per second beside the write rate, and the lag
//    (bench/webhooks.load.ts).
//
// BENCH_ONLY=idle (1 and 2) or load (3): that part alone.

import { performance } from 'node:perf_hooks';
import { parseAllowedCidrs } from '../src/outbound/outbound.address.js';
import { openInProcess } from './harness/inprocess.js';
import { anyFreePort, start, stopAll, waitReady } from './harness/processes.js';
import { inTurn, versus } from './harness/stats.js';
import { underLoad } from './webhooks.load.js';

const SHORT = process.env.BENCH_SHORT === '1';
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? (SHORT ? 300 : 5_000));
const ENDPOINTS = Number(process.env.BENCH_WEBHOOK_ENDPOINTS ?? 8);
const WRITES = Number(process.env.BENCH_WEBHOOK_WRITES ?? (SHORT ? 100 : 1_000));

/** A receiver answering 204 at once, on the PORT it is given. */
const RECEIVER = `
  require('node:http')
    .createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(204).end()); })
    .listen(Number(process.env.PORT), process.env.HOST);`;

export async function webhooks(): Promise<void> {
  // The receiver is a process of its own, as it would be in production: its CPU is not the service's.
  const receiver = start('receiver', ['-e', RECEIVER], await anyFreePort(), {});
  try {
    await waitReady(receiver, '/');
    const target = `http://127.0.0.1:${receiver.port}/hook`;
    const only = process.env.BENCH_ONLY;
    if (only !== 'load') await measure(target);
    if (only !== 'idle') await underLoad(target, [1, ENDPOINTS]);
  } finally {
    await stopAll();
  }
}

async function measure(target: string): Promise<void> {
  const bench = await openInProcess('bench_webhooks', {
    allowed: parseAllowedCidrs('127.0.0.0/8'),
    pollMs: 100,
    concurrency: Math.max(16, ENDPOINTS),
  });
  const { db, app } = bench;
  const call = async (method: 'POST' | 'DELETE', path: string, payload?: object) => (await bench.call(method, path, payload)).json().data;
  /** Deliveries made so far: the sum of every endpoint's attempts that got a 2xx. */
  const received = async () =>
    Number((await db.sql<{ n: string }[]>`SELECT count(*)::text AS n FROM webhook_delivery WHERE status_code BETWEEN 200 AND 299`)[0]!.n);
  console.log(`database: ${db.description}`);

  const endpoints = async (n: number, events: string[]) => {
    const ids: number[] = [];
    for (let i = 0; i < n; i++) ids.push((await call('POST', '/system/webhook-api', { url: target, events })).id);
    return ids;
  };
  const removeAll = async (ids: number[]) => {
    for (const id of ids) await call('DELETE', `/system/webhook-api/${id}`);
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
    for (const mode of inTurn(round, ['with', 'without'] as const)) {
      const ids = mode === 'with' ? await endpoints(ENDPOINTS, ['dept.*']) : [];
      for (let i = 0; i < WRITES / ROUNDS; i++) {
        const s = performance.now();
        await call('POST', '/system/dept-api', { parentId: 0, deptName: `W ${round} ${mode} ${i}` });
        samples[mode].push(performance.now() - s);
      }
      // Let the deliveries of this round finish before the next round is timed.
      await new Promise((r) => setTimeout(r, 500));
      await removeAll(ids);
    }
  }
  console.log(
    `write cost: dept create, ${samples.with.length}+${samples.without.length} requests: ${versus(samples.with, samples.without)} ` +
      `with ${ENDPOINTS} endpoints receiving each create vs none`,
  );
  await bench.close();
}
