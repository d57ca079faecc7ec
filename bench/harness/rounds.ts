// Load over real HTTP: autocannon against one process, the CPU time and the
// resident memory that process spent read from /proc, and interleaved rounds
// of the service and the baseline printed as ratios. Nothing here asserts a
// time.
//
// BENCH_SHORT=1: one short round with few connections (CI proves the harness works).
// BENCH_ROUNDS, BENCH_SECONDS, BENCH_CONNECTIONS: the rounds; BENCH_RATE: a fixed offered load (req/s).

import { readFile } from 'node:fs/promises';
import autocannon from 'autocannon';
import type { Child } from './processes.js';
import { fmt, inTurn, median } from './stats.js';

export const SHORT = process.env.BENCH_SHORT === '1';
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (SHORT ? 1 : 4));
export const SECONDS = Number(process.env.BENCH_SECONDS ?? (SHORT ? 2 : 8));
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? (SHORT ? 10 : 50));
const RATE = Number(process.env.BENCH_RATE ?? 0);

// ---------------------------------------------------------------- /proc

/** A memory figure of `pid` in MiB: VmRSS (resident now) or VmHWM (its peak); 0 where /proc is not there. */
export async function memoryOf(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1] ?? 0);
  return kb / 1024;
}

/** The highest RSS (MiB) of `pid` while `work` runs, sampled every 100 ms. */
export async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = await memoryOf(pid, 'VmRSS');
  const timer = setInterval(() => void memoryOf(pid, 'VmRSS').then((mib) => (peak = Math.max(peak, mib))), 100);
  try {
    const result = await work();
    peak = Math.max(peak, await memoryOf(pid, 'VmRSS'));
    return { result, peak };
  } finally {
    clearInterval(timer);
  }
}

/** CPU time (ms, user + system) `pid` has used so far; 0 where /proc is not there. */
async function cpuMs(pid: number | undefined): Promise<number> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th, in clock ticks (100/s).
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) * 10;
}

// ---------------------------------------------------------------- autocannon

/** A write for autocannon: its method and a fresh body for each request (and, when given, a fresh path and headers). */
interface Write {
  method: 'POST' | 'PUT';
  body: () => object;
  path?: () => string;
  headers?: () => Record<string, string>;
}

/** `connections` (CONNECTIONS) on `path` for `seconds`; every request must succeed. CPU per request is `pid`'s. */
export async function cannon(
  port: number,
  path: string,
  headers: Record<string, string>,
  seconds = SECONDS,
  pid?: number,
  write?: Write,
  connections = CONNECTIONS,
) {
  const cpuBefore = await cpuMs(pid);
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${path}`,
    headers: write ? { ...headers, 'content-type': 'application/json' } : headers,
    ...(write
      ? {
          method: write.method,
          requests: [
            {
              setupRequest: (request: autocannon.Request) => ({
                ...request,
                ...(write.path ? { path: write.path() } : {}),
                // The request's own headers replace the run's: send those too.
                ...(write.headers ? { headers: { ...headers, 'content-type': 'application/json', ...write.headers() } } : {}),
                body: JSON.stringify(write.body()),
              }),
            },
          ],
        }
      : {}),
    connections,
    duration: seconds,
    // Bounded in requests as well as time.
    maxOverallRequests: 60_000 * seconds,
    // BENCH_RATE: a fixed offered load (req/s) instead of as fast as possible; CPU per request is steadiest there.
    ...(RATE > 0 ? { overallRate: RATE } : {}),
  });
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0)
    throw new Error(`${write?.method ?? 'GET'} ${path} on ${port}: ${failed} failed requests (statuses ${JSON.stringify(result.statusCodeStats)})`);
  // What one request costs the server process in CPU: the figure the machine's load moves least.
  const cpuUs = (((await cpuMs(pid)) - cpuBefore) * 1000) / Math.max(result.requests.total, 1);
  return { rps: result.requests.average, mean: result.latency.average, p99: result.latency.p99, cpuUs };
}

type Figures = Awaited<ReturnType<typeof cannon>>;

/**
 * ROUNDS rounds of `run` against the service and the baseline, alternating
 * which goes first so drift on a shared machine hits both alike, after a
 * warm-up of each that is not reported; prints each round and the median
 * ratios. `peaks` keeps each process's highest RSS.
 */
export async function interleaved(
  label: string,
  both: { service: Child; baseline: Child },
  peaks: { service: number; baseline: number },
  run: (port: number, pid: number | undefined, seconds: number) => Promise<Figures>,
  names = { service: 'service', baseline: 'baseline' },
): Promise<void> {
  // Warm-up, not reported: the JIT and the caches see the route before the first round counts.
  for (const child of [both.service, both.baseline]) await run(child.port, child.proc.pid, Math.min(2, SECONDS));
  const ratios: number[] = [];
  const p99Ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const figures: Partial<Record<'service' | 'baseline', Figures>> = {};
    for (const who of inTurn(round, ['service', 'baseline'] as const)) {
      const child = both[who];
      const { result, peak } = await peakRss(child.proc.pid!, () => run(child.port, child.proc.pid, SECONDS));
      figures[who] = result;
      peaks[who] = Math.max(peaks[who], peak);
    }
    const s = figures.service!;
    const b = figures.baseline!;
    ratios.push(s.rps / b.rps);
    p99Ratios.push(s.p99 / b.p99);
    console.log(
      `${label.padEnd(28)} round ${round + 1}: ${names.service} ${fmt(s.rps)} req/s p99 ${s.p99} ms | ` +
        `${names.baseline} ${fmt(b.rps)} req/s p99 ${b.p99} ms | ratio ${fmt(s.rps / b.rps, 2)}x, p99 ${fmt(s.p99 / b.p99, 2)}x | ` +
        `CPU per request ${fmt(s.cpuUs)} vs ${fmt(b.cpuUs)} µs`,
    );
  }
  console.log(
    `${label.padEnd(28)} median ratio ${fmt(median(ratios), 2)}x throughput (${ratios.map((r) => fmt(r, 2)).join(', ')}), ` +
      `${fmt(median(p99Ratios), 2)}x p99`,
  );
}
