// npm run bench: measures the department hot paths through the real HTTP
// stack (app.inject) on a fresh database: DATABASE_URL's server when set,
// else the embedded PGlite. Prints figures; asserts only correctness.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench
//   BENCH_SUBTREE=10000 BENCH_REQUESTS=2000 npm run bench
//
// `npm run bench -- load`, `-- big` and `-- writes` run the service as a
// process against a bare-stack baseline instead (bench/load.bench.ts);
// `npm run bench -- webhooks` measures webhook delivery (bench/webhooks.bench.ts);
// `npm run bench -- scale` reads across 10,000 tenants beside a near-empty
// database (bench/scale.bench.ts).

import { performance } from 'node:perf_hooks';
import { buildApp } from '../src/app.js';
import { bootstrap } from '../src/bootstrap.js';
import { openEmbedded, type Database } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { openFreshPostgres } from '../tests/support/fresh-postgres.js';
import { auditSwitch } from '../src/audit/audit.record.js';

const SUBTREE = Number(process.env.BENCH_SUBTREE ?? 10_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2_000);
const PASSWORD = 'bench-password-1';

async function freshDatabase(): Promise<Database> {
  const url = process.env.DATABASE_URL;
  return url ? openFreshPostgres(url, 'bench', 10) : openEmbedded(undefined);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main() {
  const db = await freshDatabase();
  await migrate(db.sql);
  await bootstrap(db.sql, PASSWORD);
  const app = await buildApp({ sql: db.sql, config: { jwtSecret: undefined, tokenTtl: 3600, logLevel: 'silent' }, logger: false });
  await app.ready();
  const call = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, token?: string) => {
    const res = await app.inject({ method, url, payload, headers: token ? { authorization: `Bearer ${token}` } : {} });
    if (res.statusCode !== 200) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res;
  };
  const token = (await call('POST', '/auth/login', { tenantId: '000000', username: 'admin', password: PASSWORD })).json().data.access_token;
  const created = async (deptName: string, parentId: number) =>
    Number(
      String((await call('POST', '/system/dept-api', { parentId, deptName }, token)).headers.location)
        .split('/')
        .pop(),
    );

  console.log(`database: ${db.description}`);

  // A subtree of SUBTREE departments under `moving`: 1 + k children + k*k grandchildren.
  const moving = await created('Moving', 0);
  const target = await created('Target', 0);
  const fanout = Math.ceil(Math.sqrt(SUBTREE));
  const t0 = performance.now();
  await db.sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name)
    SELECT '000000', ${moving}, ${`0,${moving}`}, 'C' || g FROM generate_series(1, ${fanout}) g`;
  await db.sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name)
    SELECT '000000', c.dept_id, c.ancestors || ',' || c.dept_id, 'G' || g
    FROM sys_dept c, generate_series(1, ${fanout - 1}) g
    WHERE c.tenant_id = '000000' AND c.parent_id = ${moving}`;
  await db.sql`ANALYZE sys_dept`;
  const [sized] = await db.sql<{ size: number }[]>`
    SELECT count(*) AS size FROM sys_dept WHERE tenant_id = '000000' AND (ancestors LIKE ${`0,${moving},%`} OR ancestors = ${`0,${moving}`})`;
  const size = sized!.size;
  console.log(`subtree built: ${size + 1} departments (including its root) in ${(performance.now() - t0).toFixed(0)} ms`);

  const moves: number[] = [];
  for (const [parentId, label] of [
    [target, 'under Target'],
    [0, 'back to top level'],
    [target, 'under Target again'],
  ] as const) {
    const start = performance.now();
    await call('PUT', '/system/dept-api', { deptId: moving, parentId, deptName: 'Moving' }, token);
    const ms = performance.now() - start;
    moves.push(ms);
    const expectedPrefix = parentId === 0 ? `0,${moving}` : `0,${target},${moving}`;
    const [check] = await db.sql<{ wrong: number; total: number }[]>`
      WITH RECURSIVE sub AS (
        SELECT dept_id, ancestors, ${expectedPrefix}::text AS expected FROM sys_dept WHERE tenant_id = '000000' AND parent_id = ${moving}
        UNION ALL
        SELECT d.dept_id, d.ancestors, s.expected || ',' || s.dept_id FROM sys_dept d JOIN sub s ON d.tenant_id = '000000' AND d.parent_id = s.dept_id
      ) SELECT count(*) FILTER (WHERE ancestors <> expected) AS wrong, count(*) AS total FROM sub`;
    if (check!.wrong !== 0) throw new Error(`${check!.wrong} wrong ancestors after the move`);
    console.log(`move of ${check!.total + 1} departments ${label}: ${ms.toFixed(0)} ms (all ancestors verified)`);
  }

  // Request latency of the common calls, one at a time.
  const latency = async (label: string, fn: (i: number) => Promise<unknown>) => {
    const times: number[] = [];
    const start = performance.now();
    for (let i = 0; i < REQUESTS; i++) {
      const s = performance.now();
      await fn(i);
      times.push(performance.now() - s);
    }
    const total = performance.now() - start;
    times.sort((a, b) => a - b);
    console.log(
      `${label.padEnd(28)} ${REQUESTS} requests: ${(REQUESTS / (total / 1000)).toFixed(0)} req/s, ` +
        `p50 ${percentile(times, 50).toFixed(2)} ms, p99 ${percentile(times, 99).toFixed(2)} ms`,
    );
  };
  const leaf = await created('Leaf parent', 0);
  await latency('POST /system/dept-api', (i) => call('POST', '/system/dept-api', { parentId: leaf, deptName: `L${i}` }, token));
  await latency('GET /system/dept-api/{id}', () => call('GET', `/system/dept-api/${leaf}`, undefined, token));
  await latency('PUT (rename, no move)', (i) => call('PUT', '/system/dept-api', { deptId: leaf, parentId: 0, deptName: `Leaf parent ${i}` }, token));
  const listStart = performance.now();
  const list = (await call('GET', '/system/dept-api/list', undefined, token)).json().data.length;
  console.log(`GET /system/dept-api/list of ${list} departments: ${(performance.now() - listStart).toFixed(0)} ms`);
  const treeStart = performance.now();
  await call('GET', '/system/dept-api/tree', undefined, token);
  console.log(`GET /system/dept-api/tree of ${list} departments: ${(performance.now() - treeStart).toFixed(0)} ms`);

  // What the audit trail adds to create and update: the same requests with
  // the record write (and the sequencer run after the response) switched
  // on and off, in alternating rounds so drift on a shared machine hits
  // both sides alike. The switch exists for this measurement only.
  const ROUNDS = 8;
  const PER_ROUND = Math.max(50, Math.floor(REQUESTS / 8));
  const samples = { on: { create: [] as number[], update: [] as number[] }, off: { create: [] as number[], update: [] as number[] } };
  const auditParent = await created('Audit cost', 0);
  const renamed = await created('Audit rename', 0);
  let n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      auditSwitch.enabled = mode === 'on';
      for (let i = 0; i < PER_ROUND; i++) {
        n++;
        let s = performance.now();
        await call('POST', '/system/dept-api', { parentId: auditParent, deptName: `A${n}` }, token);
        samples[mode].create.push(performance.now() - s);
        s = performance.now();
        await call('PUT', '/system/dept-api', { deptId: renamed, parentId: 0, deptName: `Audit rename ${n}` }, token);
        samples[mode].update.push(performance.now() - s);
      }
    }
  }
  auditSwitch.enabled = true;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (const op of ['create', 'update'] as const) {
    const on = [...samples.on[op]].sort((a, b) => a - b);
    const off = [...samples.off[op]].sort((a, b) => a - b);
    const pct = (a: number, b: number) => `${(((a - b) / b) * 100).toFixed(1)}%`;
    console.log(
      `audit cost, ${op.padEnd(6)} ${on.length}+${off.length} requests: ` +
        `p50 ${percentile(on, 50).toFixed(2)} vs ${percentile(off, 50).toFixed(2)} ms (${pct(percentile(on, 50), percentile(off, 50))}), ` +
        `mean ${mean(on).toFixed(2)} vs ${mean(off).toFixed(2)} ms (${pct(mean(on), mean(off))}) with vs without audit`,
    );
  }

  const mem = process.memoryUsage();
  console.log(`memory: rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB, heap used ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB`);
  await app.close();
  await db.close();
}

const mode = process.argv[2];
const run = async () => {
  if (mode === undefined || mode === 'latency') return main();
  if (mode === 'webhooks') return (await import('./webhooks.bench.js')).webhooks();
  if (mode !== 'load' && mode !== 'big' && mode !== 'writes' && mode !== 'scale')
    throw new Error(`unknown bench mode "${mode}": use latency, load, big, writes, scale or webhooks`);
  const harness = await import('./load.bench.js');
  await harness.buildService();
  if (mode === 'scale') return (await import('./scale.bench.js')).scale();
  await harness[mode]();
};

// A run whose event loop empties before it finishes (a promise nothing keeps
// alive) would otherwise end with code 0 and no figures: make that a failure.
let finished = false;
process.on('exit', (code) => {
  if (!finished && code === 0) {
    console.error('bench: ended before it finished (the event loop emptied); no figures');
    process.exitCode = 1;
  }
});

run()
  .then(() => (finished = true))
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
