// `npm run bench -- scale`: reads across tenants on a big database beside the
// same reads on a near-empty one, in the same run. Two fresh databases on
// DATABASE_URL's server (PostgreSQL only; both dropped at the end, or kept
// with BENCH_SCALE_KEEP=1): what they hold is in bench/scale/seed.ts, what is
// read in bench/scale/reads.ts.
//
// The built service (scripts/start.sh, as npm start runs it) runs against each, and every read is
// timed over HTTP for a small tenant's admin, the platform admin and a tenant made through the API, in
// interleaved rounds so drift on the machine hits both databases alike.
// Prints mean, p50 and p99 per database and the ratio; asserts only
// correctness (statuses, page sizes, the records a catch-up delivers).
// Then under load: every read that is one GET, from BENCH_SCALE_CONNECTIONS
// (20) connections for BENCH_SCALE_SECONDS (5) per database and round, in
// BENCH_SCALE_LOAD_ROUNDS (2) rounds, each in slices of BENCH_SCALE_SLICE
// (1) seconds that alternate between the databases: mean latency and
// throughput per database, and the ratio of the means.
// BENCH_SHORT=1: 200 tenants x 50 departments and 20,000 records, few rounds.
// BENCH_SCALE_REUSE=<scale>,<near-empty>: the two databases a run kept, read
// again without seeding (and kept); BENCH_SCALE_ONLY=<text>: only the reads
// whose label holds it.

import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { anyFreePort, cleanupOnInterrupt, startService, stopAll, waitReady } from './harness/processes.js';
import { cannon } from './harness/rounds.js';
import { inTurn, summary } from './harness/stats.js';
import { readsOf } from './scale/reads.js';
import { AUDIT, createDatabase, DEPTS, keptDatabase, TENANTS } from './scale/seed.js';

const SHORT = process.env.BENCH_SHORT === '1';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (SHORT ? 2 : 6));
const PER_ROUND = Number(process.env.BENCH_REQUESTS ?? (SHORT ? 5 : 20));
const LOAD_CONNECTIONS = Number(process.env.BENCH_SCALE_CONNECTIONS ?? (SHORT ? 5 : 20));
const LOAD_SECONDS = Number(process.env.BENCH_SCALE_SECONDS ?? (SHORT ? 1 : 5));
const LOAD_ROUNDS = Number(process.env.BENCH_SCALE_LOAD_ROUNDS ?? (SHORT ? 1 : 2));
const LOAD_SLICE = Math.min(LOAD_SECONDS, Number(process.env.BENCH_SCALE_SLICE ?? 1));
const REUSE = process.env.BENCH_SCALE_REUSE?.split(',');
const ONLY = process.env.BENCH_SCALE_ONLY;

export async function scale(): Promise<void> {
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error('npm run bench -- scale needs DATABASE_URL (PostgreSQL)');
  console.log(
    `sizes: ${TENANTS} tenants x ${DEPTS} departments, ${AUDIT} audit records; ${ROUNDS} rounds of ${PER_ROUND} requests per read and database`,
  );
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  const made: string[] = [];
  const drop = async () => {
    if (process.env.BENCH_SCALE_KEEP === '1' || REUSE) console.log(`kept: ${made.join(', ') || REUSE!.join(', ')}`);
    else for (const name of made.splice(0)) await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  };
  cleanupOnInterrupt(drop);
  try {
    const empty = REUSE ? await keptDatabase(base, 'empty', REUSE[1]!) : await createDatabase(admin, base, 'empty', false, made);
    const big = REUSE ? await keptDatabase(base, 'scale', REUSE[0]!) : await createDatabase(admin, base, 'scale', true, made);
    const jwt = randomBytes(32).toString('hex');
    const targets = { scale: { port: await anyFreePort(), db: big }, empty: { port: await anyFreePort(), db: empty } };
    const scaleProc = startService('scale', [], targets.scale.port, { DATABASE_URL: big.url, JWT_SECRET: jwt });
    const emptyProc = startService('near-empty', [], targets.empty.port, {
      DATABASE_URL: empty.url,
      JWT_SECRET: jwt,
    });
    await Promise.all([waitReady(scaleProc, '/readyz'), waitReady(emptyProc, '/readyz')]);
    const reads = (await readsOf(targets)).filter((read) => ONLY === undefined || read.label.includes(ONLY));

    console.log(`${'read'.padEnd(44)} ${'scale mean / p50 / p99 ms'.padEnd(28)} ${'near-empty mean / p50 / p99 ms'.padEnd(31)} ratio (mean, p50)`);
    for (const read of reads) {
      const samples = { scale: [] as number[], empty: [] as number[] };
      // Warm-up, not counted: JIT, caches and the chart cache see the read before the rounds.
      for (let i = 0; i < 3; i++) for (const which of ['scale', 'empty'] as const) await read.run(which);
      for (let round = 0; round < ROUNDS; round++) {
        for (const which of inTurn(round, ['scale', 'empty'] as const)) {
          for (let i = 0; i < PER_ROUND; i++) {
            const t = performance.now();
            await read.run(which);
            samples[which].push(performance.now() - t);
          }
        }
      }
      const s = summary(samples.scale);
      const e = summary(samples.empty);
      const f = (x: { mean: number; p50: number; p99: number }) => `${x.mean.toFixed(1)} / ${x.p50.toFixed(1)} / ${x.p99.toFixed(1)}`;
      console.log(`${read.label.padEnd(44)} ${f(s).padEnd(28)} ${f(e).padEnd(31)} ${(s.mean / e.mean).toFixed(2)}x, ${(s.p50 / e.p50).toFixed(2)}x`);
    }

    console.log(
      `\nunder load: ${LOAD_CONNECTIONS} connections for ${LOAD_SECONDS} s per database, ${LOAD_ROUNDS} rounds in alternating ${LOAD_SLICE} s slices (every request must succeed)`,
    );
    console.log(`${'read'.padEnd(44)} ${'scale mean ms, req/s'.padEnd(24)} ${'near-empty mean ms, req/s'.padEnd(27)} ratio of means`);
    for (const read of reads) {
      if (!read.request) continue;
      const runs = { scale: [] as { mean: number; rps: number }[], empty: [] as { mean: number; rps: number }[] };
      // Each round's seconds in slices that take turns, so drift on the machine (a checkpoint, autovacuum) meets both alike.
      for (let round = 0; round < LOAD_ROUNDS; round++) {
        for (let slice = 0; slice < Math.ceil(LOAD_SECONDS / LOAD_SLICE); slice++) {
          for (const which of inTurn(round + slice, ['scale', 'empty'] as const)) {
            const { path, headers } = read.request(which);
            runs[which].push(await cannon(targets[which].port, path, headers, LOAD_SLICE, undefined, undefined, LOAD_CONNECTIONS));
          }
        }
      }
      // Over the rounds: the mean latency weighted by the requests each round answered, and the mean throughput.
      const of = (xs: { mean: number; rps: number }[]) => {
        const requests = xs.reduce((n, x) => n + x.rps, 0);
        return { mean: xs.reduce((t, x) => t + x.mean * x.rps, 0) / requests, rps: requests / xs.length };
      };
      const s = of(runs.scale);
      const e = of(runs.empty);
      const f = (x: { mean: number; rps: number }) => `${x.mean.toFixed(1)}, ${Math.round(x.rps)}`;
      console.log(`${read.label.padEnd(44)} ${f(s).padEnd(24)} ${f(e).padEnd(27)} ${(s.mean / e.mean).toFixed(2)}x`);
    }
  } finally {
    await stopAll();
    await drop();
    await admin.end();
  }
}
