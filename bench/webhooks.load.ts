// `npm run bench -- webhooks`, part 3: delivery under a steady mix of
// requests (docs/benchmark.md#webhooks-under-load). The built service runs as
// a process, as the image runs it, on a fresh database of ~1,000
// departments; BY_ID connections read departments by id, TREE read the
// chart and RENAMES rename departments (one `dept.update` record each),
// while one endpoint and then BENCH_WEBHOOK_ENDPOINTS endpoints receive every
// change at a loopback receiver that answers 204 at once.
//
// Every TICK_S it prints the renames and the deliveries per second of the
// last tick and each endpoint's lag: the records written and not yet
// delivered (counted in the database when it is PostgreSQL) and the age of
// the oldest (the service's webhook_endpoint_lag_seconds gauge). At the end
// it prints the backlog as seconds of writes, then how long it takes to drain.
//
// BENCH_WEBHOOK_LOAD_SECONDS (60; BENCH_SHORT 6): how long each mix runs.
// BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the service.

import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { ADMIN_PASSWORD, prepare } from './harness/database.js';
import { anyFreePort, startService, waitReady, type Child } from './harness/processes.js';
import { cannon, SHORT } from './harness/rounds.js';
import { fmt } from './harness/stats.js';

const LOAD_SECONDS = Number(process.env.BENCH_WEBHOOK_LOAD_SECONDS ?? (SHORT ? 6 : 60));
const TICK_S = SHORT ? 2 : 10;
const [BY_ID, TREE, RENAMES] = [20, 4, 6];

/** One endpoint's lag at a tick. */
interface Lag {
  endpoint: number;
  /** Records written and not delivered yet (PostgreSQL only; -1 on the embedded database). */
  backlog: number;
  /** The oldest such record's age, as the service's gauge reads it. */
  seconds: number;
}

const metricValues = (text: string, name: string) =>
  [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*endpoint="(\\d+)"[^}]*\\})? ([0-9.e+-]+)$`, 'gm'))].map(([, endpoint, v]) => ({
    endpoint: Number(endpoint ?? 0),
    value: Number(v),
  }));

export async function underLoad(target: string, endpointCounts: number[]): Promise<void> {
  const prepared = await prepare(1_000, randomBytes(32).toString('hex'));
  const direct = process.env.DATABASE_URL
    ? postgres(prepared.serviceEnv.DATABASE_DIRECT_URL ?? prepared.serviceEnv.DATABASE_URL!, { max: 1 })
    : undefined;
  let service: Child | undefined;
  try {
    const [port, management] = [await anyFreePort(), await anyFreePort()];
    service = startService('service', (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean), port, {
      ...prepared.serviceEnv,
      OUTBOUND_ALLOWED_CIDRS: '127.0.0.0/8',
      MANAGEMENT_PORT: String(management),
    });
    await waitReady(service, '/readyz');
    const base = `http://127.0.0.1:${port}`;
    const login = await fetch(`${base}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD }),
    });
    const headers = { authorization: `Bearer ${((await login.json()) as { data: { access_token: string } }).data.access_token}` };
    const call = async (method: string, path: string, body?: object) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const json = (await res.json()) as { code: number; data: unknown; msg: string };
      if (json.code !== 200) throw new Error(`${method} ${path}: ${json.code} ${json.msg}`);
      return json.data;
    };
    const depts = (await call('GET', '/system/dept-api/list')) as { deptId: number; parentId: number; deptName: string }[];
    const teams = depts.filter((d) => d.deptName.startsWith('Team '));
    const metrics = async () => (await fetch(`http://127.0.0.1:${management}/metrics`)).text();
    const delivered = async () => metricValues(await metrics(), 'webhook_attempts_delivered_total')[0]?.value ?? 0;
    const lags = async (): Promise<Lag[]> => {
      const gauge = new Map(metricValues(await metrics(), 'webhook_endpoint_lag_seconds').map((m) => [m.endpoint, m.value]));
      const counted = direct
        ? await direct<{ endpoint: number; backlog: number; oldest: number }[]>`
            SELECT c.endpoint_id::int AS endpoint, count(a.seq)::int AS backlog,
                   coalesce(extract(epoch FROM now() - min(a.time)), 0)::float8 AS oldest
            FROM webhook_endpoint c
            LEFT JOIN audit_log a ON (a.position > c.cursor OR a.position IS NULL) AND a.action LIKE 'dept.%'
            WHERE c.status = '0' GROUP BY c.endpoint_id ORDER BY 1`
        : [...gauge.keys()].map((endpoint) => ({ endpoint, backlog: -1, oldest: NaN }));
      // The gauge when the service has it; the database's own count otherwise (a build from before it).
      return counted.map(({ endpoint, backlog, oldest }) => ({ endpoint, backlog, seconds: gauge.get(endpoint) ?? oldest }));
    };
    // The database's transactions a second (each statement outside a transaction is one; the requests' included):
    // the 8-endpoint run's against the 1-endpoint run's is what the deliveries' claims, reads and acknowledgements
    // add. Counted as PostgreSQL reports them (flushed each second).
    const transactions = async () =>
      direct
        ? Number(
            (await direct<{ n: string }[]>`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`)[0]!.n,
          )
        : NaN;
    console.log(
      `webhooks under load: ${prepared.description}; ${depts.length} departments; ${BY_ID} connections GET by id, ${TREE} GET tree, ` +
        `${RENAMES} PUT renames, ${LOAD_SECONDS} s per run`,
    );

    let renamed = 0;
    for (const n of endpointCounts) {
      const ids: number[] = [];
      for (let i = 0; i < n; i++) ids.push(((await call('POST', '/system/webhook-api', { url: target, events: ['dept.*'] })) as { id: number }).id);
      const started = performance.now();
      const transactionsBefore = await transactions();
      let last = { at: started, renamed, delivered: await delivered() };
      let worst = { seconds: 0, backlog: direct ? 0 : -1 }; // no count on the embedded database
      const tick = async () => {
        const now = { at: performance.now(), renamed, delivered: await delivered() };
        const span = (now.at - last.at) / 1000;
        const rate = (now.renamed - last.renamed) / span;
        const lag = await lags();
        const max = { seconds: Math.max(...lag.map((l) => l.seconds)), backlog: Math.max(...lag.map((l) => l.backlog)) };
        worst = { seconds: Math.max(worst.seconds, max.seconds), backlog: Math.max(worst.backlog, max.backlog) };
        console.log(
          `  ${n} endpoint(s) t=${fmt((now.at - started) / 1000)} s: ${fmt(rate)} renames/s, ${fmt((now.delivered - last.delivered) / span)} deliveries/s` +
            ` (${fmt((now.delivered - last.delivered) / span / n)} per endpoint); worst endpoint: ${max.backlog < 0 ? '' : `${max.backlog} records behind, `}` +
            `oldest undelivered ${fmt(max.seconds, 1)} s`,
        );
        last = now;
        return { rate, max };
      };
      // The last tick is taken after the one in flight, never beside it: both move `last`.
      let ticking: Promise<unknown> = Promise.resolve();
      const ticker = setInterval(() => {
        ticking = tick().catch((err) => console.error('tick failed', err));
      }, TICK_S * 1000);
      const runs = await Promise.all([
        cannon(port, `/system/dept-api/${depts[depts.length - 1]!.deptId}`, headers, LOAD_SECONDS, service.proc.pid, undefined, BY_ID),
        cannon(port, '/system/dept-api/tree', headers, LOAD_SECONDS, undefined, undefined, TREE),
        cannon(
          port,
          '/system/dept-api',
          headers,
          LOAD_SECONDS,
          undefined,
          {
            method: 'PUT',
            body: () => {
              const d = teams[renamed++ % teams.length]!;
              return { deptId: d.deptId, parentId: d.parentId, deptName: `Renamed ${renamed}` };
            },
          },
          RENAMES,
        ),
      ]);
      clearInterval(ticker);
      await ticking;
      const end = await tick();
      const [byId, tree, rename] = runs;
      const perSecond = ((await transactions()) - transactionsBefore) / ((performance.now() - started) / 1000);
      console.log(
        `  ${n} endpoint(s), end of load: GET by id ${fmt(byId.rps)} req/s p99 ${byId.p99} ms, tree ${fmt(tree.rps)} req/s p99 ${tree.p99} ms, ` +
          `renames ${fmt(rename.rps)} req/s p99 ${rename.p99} ms; backlog at the end ` +
          `${end.max.backlog < 0 ? '' : `${end.max.backlog} records = ${fmt(end.max.backlog / rename.rps, 1)} s of writes, `}oldest ${fmt(end.max.seconds, 1)} s; ` +
          `worst tick ${worst.backlog < 0 ? '' : `${worst.backlog} records, `}${fmt(worst.seconds, 1)} s` +
          (Number.isNaN(perSecond) ? '' : `; the database ${fmt(perSecond)} transactions/s`),
      );
      const draining = performance.now();
      while ((await lags()).some((l) => l.backlog > 0 || l.seconds > 0) && performance.now() - draining < 300_000)
        await new Promise((r) => setTimeout(r, 200));
      console.log(`  ${n} endpoint(s): drained ${fmt((performance.now() - draining) / 1000, 1)} s after the load stopped`);
      for (const id of ids) await call('DELETE', `/system/webhook-api/${id}`);
    }
  } finally {
    await direct?.end();
    if (service) {
      service.proc.kill('SIGTERM');
      await new Promise((r) => service!.proc.once('exit', r));
    }
    await prepared.cleanup();
  }
}
