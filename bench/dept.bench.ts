// `npm run bench` (no mode, or `latency`): the department hot paths through
// the real HTTP stack (app.inject) on a fresh database: DATABASE_URL's
// server when set, else the embedded PGlite (bench/harness/inprocess.ts).
// Prints figures; asserts only correctness.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench
//   BENCH_SUBTREE=10000 BENCH_REQUESTS=2000 npm run bench

import { performance } from 'node:perf_hooks';
import { addAuditDropTrigger } from './harness/database.js';
import { openInProcess, type InProcess } from './harness/inprocess.js';
import { inTurn, percentile, versus } from './harness/stats.js';

const SUBTREE = Number(process.env.BENCH_SUBTREE ?? 10_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2_000);

export async function latency(): Promise<void> {
  const bench = await openInProcess('bench');
  const { db, call } = bench;
  const created = async (deptName: string, parentId: number) =>
    Number(
      String((await call('POST', '/system/dept-api', { parentId, deptName })).headers.location)
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

  for (const [parentId, label] of [
    [target, 'under Target'],
    [0, 'back to top level'],
    [target, 'under Target again'],
  ] as const) {
    const start = performance.now();
    await call('PUT', '/system/dept-api', { deptId: moving, parentId, deptName: 'Moving' });
    const ms = performance.now() - start;
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
  const timed = async (label: string, fn: (i: number) => Promise<unknown>) => {
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
  await timed('POST /system/dept-api', (i) => call('POST', '/system/dept-api', { parentId: leaf, deptName: `L${i}` }));
  await timed('GET /system/dept-api/{id}', () => call('GET', `/system/dept-api/${leaf}`));
  await timed('PUT (rename, no move)', (i) => call('PUT', '/system/dept-api', { deptId: leaf, parentId: 0, deptName: `Leaf parent ${i}` }));
  const listStart = performance.now();
  const list = (await call('GET', '/system/dept-api/list')).json().data.length;
  console.log(`GET /system/dept-api/list of ${list} departments: ${(performance.now() - listStart).toFixed(0)} ms`);
  const treeStart = performance.now();
  await call('GET', '/system/dept-api/tree');
  console.log(`GET /system/dept-api/tree of ${list} departments: ${(performance.now() - treeStart).toFixed(0)} ms`);

  await auditCost(bench, await created('Audit cost', 0), await created('Audit rename', 0));

  const mem = process.memoryUsage();
  console.log(`memory: rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB, heap used ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB`);
  await bench.close();
}

/**
 * What storing the audit record adds to a create and an update: the same
 * requests with the records stored, and with them dropped by the database
 * before they are stored (a BEFORE INSERT trigger the bench adds to
 * `audit_log`, enabled only in the rounds without), in alternating rounds so
 * drift on a shared machine hits both sides alike. Both sides build the
 * record in the write's statement and run the sequencer after the response;
 * the difference is the record's row and index entries and its positioning.
 */
async function auditCost({ db, call }: InProcess, parentId: number, renamed: number): Promise<void> {
  await addAuditDropTrigger(db.sql);
  const stored = (on: boolean) =>
    on ? db.sql`ALTER TABLE audit_log DISABLE TRIGGER bench_audit_dropped` : db.sql`ALTER TABLE audit_log ENABLE TRIGGER bench_audit_dropped`;
  const ROUNDS = 8;
  const PER_ROUND = Math.max(50, Math.floor(REQUESTS / 8));
  const samples = { on: { create: [] as number[], update: [] as number[] }, off: { create: [] as number[], update: [] as number[] } };
  const records = async () => (await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM audit_log`)[0]!.n;
  const before = await records();
  let n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of inTurn(round, ['on', 'off'] as const)) {
      await stored(mode === 'on');
      for (let i = 0; i < PER_ROUND; i++) {
        n++;
        let s = performance.now();
        await call('POST', '/system/dept-api', { parentId, deptName: `A${n}` });
        samples[mode].create.push(performance.now() - s);
        s = performance.now();
        await call('PUT', '/system/dept-api', { deptId: renamed, parentId: 0, deptName: `Audit rename ${n}` });
        samples[mode].update.push(performance.now() - s);
      }
    }
  }
  await stored(true);
  // One record per write of the rounds with them stored, none from the others.
  const recorded = (await records()) - before;
  if (recorded !== samples.on.create.length + samples.on.update.length) throw new Error(`audit cost: ${recorded} records stored`);
  for (const op of ['create', 'update'] as const) {
    console.log(
      `audit cost, ${op.padEnd(6)} ${samples.on[op].length}+${samples.off[op].length} requests: ` +
        `${versus(samples.on[op], samples.off[op])} with vs without the record stored`,
    );
  }
}
