// `npm run bench -- load` and `npm run bench -- big`: the built service
// (node dist/main.js) and the bare-stack baseline (bench/baseline.server.ts)
// as child processes on 127.0.0.1, on the same database and rows, driven over
// real HTTP by autocannon in interleaved rounds. Figures are printed beside
// the baseline's from the same run, as ratios; nothing here asserts a time.
//
//   load: GET /system/dept-api/{id}, tree and list of ~BENCH_DEPTS (1,000) departments
//   big:  cold tree/list of BENCH_BIG (100,000) departments, list?parentId=, a move of the whole subtree
//   writes: creates under one parent, and moves of 31-department subtrees between two
//           parents, each side on its own rows (the baseline's writes: bench/baseline.server.ts)
//
// DATABASE_URL set: a fresh database on that server (dropped afterwards);
// unset: an embedded PGlite data directory (the baseline gets a copy of it).
// BENCH_SHORT=1: one short round with few connections (CI proves the harness works).
// BENCH_POOLER_URL (with DATABASE_URL): both processes reach the database through
// that pooler (PgBouncer in transaction mode, fronting DATABASE_URL's server);
// the service keeps DATABASE_DIRECT_URL for LISTEN and migrations.
// BENCH_DB_PREPARE=false: both processes without named prepared statements
// (DB_PREPARE=false); required through PgBouncer 1.18.
// BENCH_OTLP=1: the service with traces on (docs/operations.md#traces), sending
// them over OTLP/HTTP to a receiver in this process on loopback that reads and
// discards them; other OTEL_* variables given to the bench reach the service.

import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { bootstrap } from '../src/bootstrap.js';
import { openEmbedded, openPostgres, type Sql } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';

const SHORT = process.env.BENCH_SHORT === '1';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (SHORT ? 1 : 4));
const SECONDS = Number(process.env.BENCH_SECONDS ?? (SHORT ? 2 : 8));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? (SHORT ? 10 : 50));
const RATE = Number(process.env.BENCH_RATE ?? 0);
const DEPTS = Number(process.env.BENCH_DEPTS ?? 1_000);
const BIG = Number(process.env.BENCH_BIG ?? (SHORT ? 2_000 : 100_000));
// Two free ports from BENCH_PORT (19400) up, so two runs on one machine never answer each other.
let SERVICE_PORT = Number(process.env.BENCH_PORT ?? 19_400);
let BASELINE_PORT = SERVICE_PORT + 1;
/**
 * The service's management listener, on as in the container image (which sets
 * MANAGEMENT_PORT), on a free port found at start, and scraped once a second
 * while the load benchmark runs, so its figures include the metrics' cost.
 * BENCH_MANAGEMENT=off starts the service without it, to measure that cost.
 */
const MANAGEMENT = process.env.BENCH_MANAGEMENT !== 'off';
let MANAGEMENT_PORT = 0;
const PASSWORD = 'bench-password-1';
const ROOT = new URL('..', import.meta.url).pathname;

// ---------------------------------------------------------------- processes

interface Child {
  name: string;
  proc: ChildProcess;
  port: number;
  log: string[];
}

const children: Child[] = [];

/** BENCH_OTLP=1: what the receiver got, to print beside the figures. */
const otlp = { requests: 0, bytes: 0, server: undefined as Server | undefined };

/** An OTLP/HTTP receiver on loopback that answers every export with success and keeps nothing. */
async function startOtlpSink(): Promise<string> {
  const server = createHttpServer((req, res) => {
    req.on('data', (chunk: Buffer) => (otlp.bytes += chunk.length));
    req.on('end', () => {
      otlp.requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  otlp.server = server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}
/** Drops the benchmark's database or data directory; also run when the bench is interrupted. */
let cleanupDatabase: (() => Promise<void>) | undefined;

export function start(name: string, args: string[], port: number, env: Record<string, string>, command = process.execPath): Child {
  const proc = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const child: Child = { name, proc, port, log: [] };
  proc.stderr!.on('data', (d: Buffer) => child.log.push(d.toString()));
  children.push(child);
  return child;
}

/**
 * The built service as npm start and the image start it (scripts/start.sh, which
 * execs node: the PID stays the service's), on this process's Node.
 */
export function startService(name: string, nodeArgs: string[], port: number, env: Record<string, string>): Child {
  return start(name, ['scripts/start.sh', ...nodeArgs], port, { ...env, NODE: process.execPath }, 'sh');
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer().once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

async function pickPorts(): Promise<void> {
  for (let port = SERVICE_PORT; port < SERVICE_PORT + 98; port += 2) {
    if ((await portIsFree(port)) && (await portIsFree(port + 1))) {
      [SERVICE_PORT, BASELINE_PORT] = [port, port + 1];
      return;
    }
  }
  throw new Error(`no two free ports from ${SERVICE_PORT}`);
}

/** A free loopback port of the system's choosing. */
function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Scrapes /metrics every second, as a Prometheus would, until the returned function is called; it resolves to the last scrape. */
function scrapeEverySecond(): () => Promise<string> {
  let last = '';
  const scrape = () =>
    fetch(`http://127.0.0.1:${MANAGEMENT_PORT}/metrics`)
      .then((res) => res.text())
      .then((text) => (last = text))
      .catch(() => undefined);
  const timer = setInterval(() => void scrape(), 1_000);
  return async () => {
    clearInterval(timer);
    await scrape();
    return last;
  };
}

export async function waitReady(child: Child, path: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null) throw new Error(`${child.name} exited ${child.proc.exitCode}: ${child.log.join('')}`);
    try {
      await fetch(`http://127.0.0.1:${child.port}${path}`);
      // Answered, and by this child: it would have exited on EADDRINUSE.
      await new Promise((r) => setTimeout(r, 200));
      if (child.proc.exitCode === null) return;
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`${child.name} did not answer within 90 s`);
}

/** Stops every child by its PID: SIGTERM, then SIGKILL after 5 s; and the OTLP receiver. */
export async function stopAll(): Promise<void> {
  otlp.server?.closeAllConnections();
  otlp.server?.close();
  await Promise.all(
    children.splice(0).map(async ({ proc }) => {
      if (proc.exitCode !== null || proc.pid === undefined) return;
      const exited = new Promise((r) => proc.once('exit', r));
      process.kill(proc.pid, 'SIGTERM');
      const timer = setTimeout(() => proc.pid !== undefined && proc.exitCode === null && process.kill(proc.pid, 'SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

async function status(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1] ?? 0);
  return kb / 1024;
}

/** The highest RSS (MiB) of `pid` while `work` runs, sampled every 100 ms. */
async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = await status(pid, 'VmRSS');
  const timer = setInterval(() => void status(pid, 'VmRSS').then((mib) => (peak = Math.max(peak, mib))), 100);
  try {
    const result = await work();
    peak = Math.max(peak, await status(pid, 'VmRSS'));
    return { result, peak };
  } finally {
    clearInterval(timer);
  }
}

// ---------------------------------------------------------------- database

interface Prepared<W = undefined> {
  description: string;
  serviceEnv: Record<string, string>;
  baselineEnv: Record<string, string>;
  /** Ids the runs use: a department to read, the root of the big subtree and a move target. */
  ids: { leaf: number; big: number; target: number };
  /** What the mode's own seed returned (writes: each side's rows). */
  extra: W;
  cleanup(): Promise<void>;
}

/**
 * Departments of the platform tenant: `Bench` with k children and k*(k-1)
 * grandchildren (about `size` in all), varied enough to exercise escaping
 * and nulls; and an empty `Target` to move it under.
 */
async function seed(sql: Sql, size: number): Promise<Prepared['ids']> {
  const [{ bench }] = (await sql<{ bench: number }[]>`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, create_by)
    SELECT '000000', dept_id, '0,' || dept_id, 'Bench', 'bench' FROM sys_dept WHERE tenant_id = '000000' AND parent_id = 0
    RETURNING dept_id AS bench`) as unknown as [{ bench: number }];
  const [{ target }] = (await sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, create_by)
    VALUES ('000000', 0, '0', 'Target', 'bench') RETURNING dept_id AS target`) as unknown as [{ target: number }];
  const k = Math.max(2, Math.ceil(Math.sqrt(size)));
  const [benchRow] = await sql<{ ancestors: string }[]>`SELECT ancestors FROM sys_dept WHERE tenant_id = '000000' AND dept_id = ${bench}`;
  await sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, order_num, leader, phone, email, create_by)
    SELECT '000000', ${bench}, ${`${benchRow!.ancestors},${bench}`}, 'Division "' || g || '" é', g % 7,
           CASE WHEN g % 2 = 0 THEN 'Lead ' || g END, CASE WHEN g % 3 = 0 THEN '+86 138 ' || g END,
           CASE WHEN g % 5 = 0 THEN 'd' || g || '@example.com' END, 'bench'
    FROM generate_series(1, ${k}) g`;
  await sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, order_num, leader, create_by)
    SELECT '000000', c.dept_id, c.ancestors || ',' || c.dept_id, 'Team ' || g, g % 11, 'Lead\\' || g, 'bench'
    FROM sys_dept c, generate_series(1, ${Math.max(0, Math.ceil(size / k) - 1)}) g
    WHERE c.tenant_id = '000000' AND c.parent_id = ${bench}`;
  await sql`ANALYZE sys_dept`;
  const [leaf] = await sql<{ id: number }[]>`SELECT max(dept_id) AS id FROM sys_dept WHERE tenant_id = '000000'`;
  return { leaf: leaf!.id, big: bench, target };
}

async function prepare<W = undefined>(size: number, jwtSecret: string, seedMore?: (sql: Sql) => Promise<W>): Promise<Prepared<W>> {
  const common = { ADMIN_PASSWORD: PASSWORD, JWT_SECRET: jwtSecret };
  const url = process.env.DATABASE_URL;
  if (url) {
    // The name is ours (prefix + hex), never input, so it is safe in the statement text.
    const name = `bench_${randomBytes(6).toString('hex')}`;
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const dbUrl = new URL(url);
    dbUrl.pathname = `/${name}`;
    const db = openPostgres(dbUrl.toString(), { max: 2 });
    await migrate(db.sql);
    await bootstrap(db.sql, PASSWORD);
    const ids = await seed(db.sql, size);
    const extra = (await seedMore?.(db.sql)) as W;
    await db.close();
    const direct = dbUrl.toString();
    const pooler = process.env.BENCH_POOLER_URL ? new URL(process.env.BENCH_POOLER_URL) : undefined;
    if (pooler) pooler.pathname = `/${name}`;
    const connection = {
      DATABASE_URL: pooler?.toString() ?? direct,
      DB_PREPARE: process.env.BENCH_DB_PREPARE === 'false' ? 'false' : 'true',
    };
    return {
      description: `PostgreSQL at ${dbUrl.host} (fresh database ${name})${pooler ? `, through the pooler at ${pooler.host}` : ''}, DB_PREPARE=${connection.DB_PREPARE}`,
      serviceEnv: { ...common, ...connection, ...(pooler ? { DATABASE_DIRECT_URL: direct } : {}) },
      baselineEnv: { ...common, ...connection },
      ids,
      extra,
      async cleanup() {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      },
    };
  }
  const dir = await mkdtemp(join(tmpdir(), 'bench-pglite-'));
  const db = await openEmbedded(join(dir, 'service'));
  await migrate(db.sql);
  await bootstrap(db.sql, PASSWORD);
  const ids = await seed(db.sql, size);
  const extra = (await seedMore?.(db.sql)) as W;
  await db.close();
  await cp(join(dir, 'service'), join(dir, 'baseline'), { recursive: true });
  const env = { ...common, DATABASE_URL: '' };
  return {
    description: 'embedded PGlite (the baseline runs its own copy of the data directory)',
    serviceEnv: { ...env, DATA_DIR: join(dir, 'service') },
    baselineEnv: { ...env, DATA_DIR: join(dir, 'baseline') },
    ids,
    extra,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

async function startBoth<W>(prepared: Prepared<W>) {
  cleanupDatabase = prepared.cleanup;
  await pickPorts();
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the service; BENCH_BASELINE_NODE_ARGS the baseline.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  if (MANAGEMENT) MANAGEMENT_PORT = await anyFreePort();
  const tracing: Record<string, string> = process.env.BENCH_OTLP === '1' ? { OTEL_EXPORTER_OTLP_ENDPOINT: await startOtlpSink() } : {};
  // As npm start and the image run it: node's settings come from scripts/start.sh.
  const service = startService('service', nodeArgs, SERVICE_PORT, { ...prepared.serviceEnv, ...tracing, MANAGEMENT_PORT: String(MANAGEMENT_PORT) });
  const baseline = start(
    'baseline',
    [...(process.env.BENCH_BASELINE_NODE_ARGS ?? '').split(' ').filter(Boolean), '--import', 'tsx', 'bench/baseline.server.ts'],
    BASELINE_PORT,
    prepared.baselineEnv,
  );
  await Promise.all([waitReady(service, '/readyz'), waitReady(baseline, '/system/dept-api/list')]);
  const login = await fetch(`http://127.0.0.1:${SERVICE_PORT}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tenantId: '000000', username: 'admin', password: PASSWORD }),
  });
  const token = ((await login.json()) as { data: { access_token: string } }).data.access_token;
  return { service, baseline, headers: { authorization: `Bearer ${token}` } };
}

async function get(port: number, path: string, headers: Record<string, string>) {
  const start = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path} on ${port}: ${res.status} ${body.slice(0, 200)}`);
  return { ms: performance.now() - start, bytes: Buffer.byteLength(body), body };
}

const fmt = (n: number, digits = 0) => n.toFixed(digits);
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

// ---------------------------------------------------------------- load

/** CPU time (ms, user + system) `pid` has used so far; 0 where /proc is not there. */
async function cpuMs(pid: number | undefined): Promise<number> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th, in clock ticks (100/s).
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) * 10;
}

/** A write for autocannon: its method and a fresh body for each request. */
interface Write {
  method: 'POST' | 'PUT';
  body: () => object;
}

async function cannon(port: number, path: string, headers: Record<string, string>, seconds = SECONDS, pid?: number, write?: Write) {
  const cpuBefore = await cpuMs(pid);
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${path}`,
    headers: write ? { ...headers, 'content-type': 'application/json' } : headers,
    ...(write
      ? {
          method: write.method,
          requests: [{ setupRequest: (request: autocannon.Request) => ({ ...request, body: JSON.stringify(write.body()) }) }],
        }
      : {}),
    connections: CONNECTIONS,
    duration: seconds,
    // Bounded in requests as well as time.
    maxOverallRequests: 60_000 * seconds,
    // BENCH_RATE: a fixed offered load (req/s) instead of as fast as possible; CPU per request is steadiest there.
    ...(RATE > 0 ? { overallRate: RATE } : {}),
  });
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) throw new Error(`${write?.method ?? 'GET'} ${path} on ${port}: ${failed} failed requests`);
  // What one request costs the server process in CPU: the figure the machine's load moves least.
  const cpuUs = (((await cpuMs(pid)) - cpuBefore) * 1000) / Math.max(result.requests.total, 1);
  return { rps: result.requests.average, p99: result.latency.p99, cpuUs };
}

type Figures = Awaited<ReturnType<typeof cannon>>;

/**
 * ROUNDS rounds of `run` against the service and the baseline, alternating
 * which goes first so drift on a shared machine hits both alike, after a
 * warm-up of each that is not reported; prints each round and the median
 * ratios. `peaks` keeps each process's highest RSS.
 */
async function interleaved(
  label: string,
  both: { service: Child; baseline: Child },
  peaks: { service: number; baseline: number },
  run: (port: number, pid: number | undefined, seconds: number) => Promise<Figures>,
): Promise<void> {
  // Warm-up, not reported: the JIT and the caches see the route before the first round counts.
  for (const child of [both.service, both.baseline]) await run(child.port, child.proc.pid, Math.min(2, SECONDS));
  const ratios: number[] = [];
  const p99Ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const figures: Partial<Record<'service' | 'baseline', Figures>> = {};
    for (const who of round % 2 === 0 ? (['service', 'baseline'] as const) : (['baseline', 'service'] as const)) {
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
      `${label.padEnd(28)} round ${round + 1}: service ${fmt(s.rps)} req/s p99 ${s.p99} ms | ` +
        `baseline ${fmt(b.rps)} req/s p99 ${b.p99} ms | ratio ${fmt(s.rps / b.rps, 2)}x, p99 ${fmt(s.p99 / b.p99, 2)}x | ` +
        `CPU per request ${fmt(s.cpuUs)} vs ${fmt(b.cpuUs)} µs`,
    );
  }
  console.log(
    `${label.padEnd(28)} median ratio ${fmt(median(ratios), 2)}x throughput (${ratios.map((r) => fmt(r, 2)).join(', ')}), ` +
      `${fmt(median(p99Ratios), 2)}x p99`,
  );
}

export async function load(): Promise<void> {
  const prepared = await prepare(DEPTS, randomBytes(32).toString('hex'));
  try {
    const { service, baseline, headers } = await startBoth(prepared);
    console.log(`database: ${prepared.description}`);
    console.log(
      MANAGEMENT ? `management listener on port ${MANAGEMENT_PORT}, /metrics scraped every second` : 'no management listener (BENCH_MANAGEMENT=off)',
    );
    const stopScraping = MANAGEMENT ? scrapeEverySecond() : undefined;
    console.log(
      `${ROUNDS} interleaved rounds of ${SECONDS} s, ${CONNECTIONS} connections, service LOG_LEVEL ${process.env.LOG_LEVEL ?? 'info (default)'}, ` +
        `traces ${otlp.server ? 'on (BENCH_OTLP=1: OTLP http/protobuf to a loopback receiver that discards)' : 'off'}`,
    );
    const only = process.env.BENCH_ONLY; // id, tree or list
    const targets = [
      { label: `GET /system/dept-api/{id}`, service: `/system/dept-api/${prepared.ids.leaf}`, baseline: `/system/dept-api/${prepared.ids.leaf}` },
      { label: 'GET /system/dept-api/tree', service: '/system/dept-api/tree', baseline: '/system/dept-api/tree' },
      { label: 'GET /system/dept-api/list', service: '/system/dept-api/list', baseline: '/system/dept-api/list' },
    ].filter((target) => !only || target.label.endsWith(only === 'id' ? '{id}' : only));
    // Correctness first: both answer, and list has the same rows.
    const ours = JSON.parse((await get(SERVICE_PORT, '/system/dept-api/list', headers)).body).data;
    const theirs = JSON.parse((await get(BASELINE_PORT, '/system/dept-api/list', headers)).body).data;
    if (ours.length !== theirs.length) throw new Error(`list: service ${ours.length} rows, baseline ${theirs.length}`);
    const treeBytes = (await get(SERVICE_PORT, '/system/dept-api/tree', headers)).bytes;
    console.log(
      `${ours.length} departments; tree ${fmt(treeBytes / 1024)} KB, baseline json_agg ${fmt((await get(BASELINE_PORT, '/system/dept-api/list', headers)).bytes / 1024)} KB`,
    );

    const peaks = { service: 0, baseline: 0 };
    for (const target of targets) {
      await interleaved(target.label, { service, baseline }, peaks, (port, pid) =>
        cannon(port, port === SERVICE_PORT ? target.service : target.baseline, headers, SECONDS, pid),
      );
    }
    const metrics = await stopScraping?.();
    if (metrics !== undefined) {
      // Proof that the metrics were collected: the requests the histogram counted, by route.
      const counted = [...metrics.matchAll(/^http_request_duration_seconds_count\{[^}]*route="([^"]+)"[^}]*\} (\d+)$/gm)]
        .map(([, route, n]) => `${route} ${n}`)
        .join(', ');
      console.log(`metrics: requests counted ${counted || 'none (scrapes failed?)'}`);
    }
    console.log(
      `service rss: peak ${fmt(peaks.service)} MiB under load, ${fmt(await status(service.proc.pid!, 'VmRSS'))} MiB after | ` +
        `baseline rss: peak ${fmt(peaks.baseline)} MiB under load`,
    );
    if (otlp.server) console.log(`traces: ${otlp.requests} exports, ${fmt(otlp.bytes / 2 ** 20, 1)} MiB received (before the service's final flush)`);
  } finally {
    await stopAll();
    await prepared.cleanup();
  }
}

// ---------------------------------------------------------------- big tenant, cold

export async function big(): Promise<void> {
  const prepared = await prepare(BIG, randomBytes(32).toString('hex'));
  try {
    const { service, headers } = await startBoth(prepared);
    const pid = service.proc.pid!;
    console.log(`database: ${prepared.description}`);
    const idle = await status(pid, 'VmRSS');
    // Each first answer beside the baseline's answer of the same rows in the same shape (its tree nested, its list a json_agg).
    const bareTree = await get(BASELINE_PORT, '/system/dept-api/tree', headers);
    const coldTree = await peakRss(pid, () => get(SERVICE_PORT, '/system/dept-api/tree', headers));
    const coldList = await peakRss(pid, () => get(SERVICE_PORT, '/system/dept-api/list', headers));
    const bare = await get(BASELINE_PORT, '/system/dept-api/list', headers);
    const count = JSON.parse(coldList.result.body).data.length;
    console.log(`${count} departments in the tenant; service rss ${fmt(idle)} MiB idle`);
    console.log(
      `first tree: ${fmt(coldTree.result.ms)} ms, ${fmt(coldTree.result.bytes / 2 ** 20, 1)} MiB, peak rss ${fmt(coldTree.peak)} MiB | ` +
        `first list: ${fmt(coldList.result.ms)} ms, peak rss ${fmt(coldList.peak)} MiB | baseline tree ${fmt(bareTree.ms)} ms, ${fmt(bareTree.bytes / 2 ** 20, 1)} MiB, ` +
        `json_agg ${fmt(bare.ms)} ms, ${fmt(bare.bytes / 2 ** 20, 1)} MiB`,
    );
    console.log(
      `first tree vs baseline tree ${fmt(coldTree.result.ms / bareTree.ms, 2)}x, first list vs baseline json_agg ${fmt(coldList.result.ms / bare.ms, 2)}x`,
    );
    // Cold again after each write (a rename bumps the tenant's chart version), interleaved with the baseline.
    for (let round = 1; round <= (SHORT ? 1 : 3); round++) {
      const rename = await fetch(`http://127.0.0.1:${SERVICE_PORT}/system/dept-api`, {
        method: 'PUT',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ deptId: prepared.ids.target, parentId: 0, deptName: `Target ${round}` }),
      });
      if (rename.status !== 200) throw new Error(`rename: ${rename.status}`);
      const b = await get(BASELINE_PORT, '/system/dept-api/list', headers);
      const tree = await peakRss(pid, () => get(SERVICE_PORT, '/system/dept-api/tree', headers));
      const list = await peakRss(pid, () => get(SERVICE_PORT, '/system/dept-api/list', headers));
      const b2 = await get(BASELINE_PORT, '/system/dept-api/tree', headers);
      console.log(
        `after write ${round}: tree ${fmt(tree.result.ms)} ms (${fmt(tree.result.ms / b2.ms, 2)}x the baseline tree), ` +
          `list ${fmt(list.result.ms)} ms (${fmt(list.result.ms / b.ms, 2)}x the json_agg) | ` +
          `baseline tree ${fmt(b2.ms)} ms, json_agg ${fmt(b.ms)} ms | peak rss ${fmt(Math.max(tree.peak, list.peak))} MiB`,
      );
    }
    const warm = await get(SERVICE_PORT, '/system/dept-api/tree', headers);
    console.log(`repeated tree (chart cache): ${fmt(warm.ms)} ms`);
    const children: number[] = [];
    for (let i = 0; i < 20; i++) children.push((await get(SERVICE_PORT, `/system/dept-api/list?parentId=${prepared.ids.big}`, headers)).ms);
    const childCount = JSON.parse((await get(SERVICE_PORT, `/system/dept-api/list?parentId=${prepared.ids.big}`, headers)).body).data.length;
    console.log(`list?parentId= (${childCount} children): first ${fmt(children[0]!, 1)} ms, median ${fmt(median(children), 1)} ms over 20`);
    const moveStart = performance.now();
    const moved = await fetch(`http://127.0.0.1:${SERVICE_PORT}/system/dept-api`, {
      method: 'PUT',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ deptId: prepared.ids.big, parentId: prepared.ids.target, deptName: 'Bench' }),
    });
    if (moved.status !== 200) throw new Error(`move: ${moved.status} ${await moved.text()}`);
    console.log(`move of the ${count - 2}-department subtree (PUT over HTTP): ${fmt(performance.now() - moveStart)} ms`);
    console.log(`service rss: peak ${fmt(await status(pid, 'VmHWM'))} MiB over the run, ${fmt(await status(pid, 'VmRSS'))} MiB now`);
  } finally {
    await stopAll();
    await prepared.cleanup();
  }
}

// ---------------------------------------------------------------- writes

/** Moved subtrees per side: more than the connections, so no two moves in flight move the same one. */
const SUBTREES = Number(process.env.BENCH_SUBTREES ?? (SHORT ? 60 : 200));

/** One side's rows: a parent to create under, and SUBTREES subtrees of 31 departments under `from`, to move to `to` and back. */
interface WriteRows {
  createParent: number;
  from: number;
  to: number;
  roots: number[];
}

/**
 * The writes' rows, one set per side (the service's and the baseline's
 * writes never touch each other's rows): under the platform tenant's root,
 * `Creates`, `From` and `To`; under `From`, SUBTREES roots `M<i>`, each with
 * 6 children of 4 children each.
 */
async function seedWrites(sql: Sql): Promise<Record<'service' | 'baseline', WriteRows>> {
  const [root] = await sql<{ id: number; ancestors: string }[]>`
    SELECT dept_id AS id, ancestors FROM sys_dept WHERE tenant_id = '000000' AND parent_id = 0 ORDER BY dept_id LIMIT 1`;
  const under = `${root!.ancestors},${root!.id}`;
  const side = async (name: string): Promise<WriteRows> => {
    const [createParent, from, to] = (
      await sql<{ id: number }[]>`
        INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, create_by)
        SELECT '000000', ${root!.id}, ${under}, n || ' ' || ${name}, 'bench' FROM unnest(ARRAY['Creates', 'From', 'To']) WITH ORDINALITY AS t(n, i)
        ORDER BY i RETURNING dept_id AS id`
    ).map((r) => r.id);
    const roots = (
      await sql<{ id: number }[]>`
        INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, create_by)
        SELECT '000000', ${from!}, ${`${under},${from}`}, 'M' || g, 'bench' FROM generate_series(0, ${SUBTREES - 1}) g
        ORDER BY g RETURNING dept_id AS id`
    ).map((r) => r.id);
    await sql`
      INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, create_by)
      SELECT '000000', m.dept_id, m.ancestors || ',' || m.dept_id, 'Child ' || g, 'bench'
      FROM sys_dept m, generate_series(1, 6) g WHERE m.tenant_id = '000000' AND m.parent_id = ${from!}`;
    await sql`
      INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, create_by)
      SELECT '000000', c.dept_id, c.ancestors || ',' || c.dept_id, 'Team ' || g, 'bench'
      FROM sys_dept c JOIN sys_dept m ON m.tenant_id = '000000' AND m.parent_id = ${from!} AND c.parent_id = m.dept_id,
           generate_series(1, 4) g
      WHERE c.tenant_id = '000000'`;
    return { createParent: createParent!, from: from!, to: to!, roots };
  };
  const rows = { service: await side('service'), baseline: await side('baseline') };
  await sql`ANALYZE sys_dept`;
  return rows;
}

/**
 * Creates and moves under CONNECTIONS connections, the service beside the
 * bare stack's minimal correct write, each on its own rows. Every request
 * must succeed (a refusal fails the run); the trees are checked afterwards.
 */
export async function writes(): Promise<void> {
  const prepared = await prepare(100, randomBytes(32).toString('hex'), seedWrites);
  try {
    const { service, baseline, headers } = await startBoth(prepared);
    console.log(`database: ${prepared.description}`);
    console.log(`${ROUNDS} interleaved rounds of ${SECONDS} s, ${CONNECTIONS} connections, ${SUBTREES} subtrees of 31 departments per side`);
    const peaks = { service: 0, baseline: 0 };
    const sideOf = (port: number) => (port === SERVICE_PORT ? prepared.extra.service : prepared.extra.baseline);
    // Per side: creates name their department after a counter; the n-th move takes subtree n % SUBTREES to the other parent.
    const counters = new Map<number, { created: number; moved: number }>();
    const counter = (port: number) => counters.get(port) ?? counters.set(port, { created: 0, moved: 0 }).get(port)!;
    const only = process.env.BENCH_ONLY; // create or move
    // Moves first: tens of thousands of creates under two parents skew the planner's estimates for every walk that follows.
    if (only !== 'create')
      await interleaved('PUT /system/dept-api (move 31)', { service, baseline }, peaks, (port, pid, seconds) =>
        cannon(port, '/system/dept-api', headers, seconds, pid, {
          method: 'PUT',
          body: () => {
            const rows = sideOf(port);
            const n = counter(port).moved++;
            const lap = Math.floor(n / SUBTREES);
            return { deptId: rows.roots[n % SUBTREES], parentId: lap % 2 === 0 ? rows.to : rows.from, deptName: `M${n % SUBTREES}` };
          },
        }),
      );
    if (only !== 'move')
      await interleaved('POST /system/dept-api (create)', { service, baseline }, peaks, (port, pid, seconds) =>
        cannon(port, '/system/dept-api', headers, seconds, pid, {
          method: 'POST',
          body: () => ({ parentId: sideOf(port).createParent, deptName: `Created ${counter(port).created++}` }),
        }),
      );
    for (const [who, port] of [
      ['service', SERVICE_PORT],
      ['baseline', BASELINE_PORT],
    ] as const) {
      console.log(`${who}: ${counter(port).created} creates and ${counter(port).moved} moves sent`);
    }
    console.log(`service rss: peak ${fmt(peaks.service)} MiB | baseline rss: peak ${fmt(peaks.baseline)} MiB`);
  } finally {
    await stopAll();
    await prepared.cleanup();
  }
}

export async function buildService(): Promise<void> {
  const build = spawn('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  const code = await new Promise((r) => build.once('exit', r));
  if (code !== 0) throw new Error(`npm run build failed (${code})`);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(
    signal,
    () =>
      void stopAll()
        .then(() => cleanupDatabase?.())
        .finally(() => process.exit(130)),
  );
}
