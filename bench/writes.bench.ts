// `npm run bench -- writes`: creates under one parent, and moves of
// 31-department subtrees between two parents, under BENCH_CONNECTIONS
// connections, the built service beside the bare stack's minimal correct
// write (bench/baseline.server.ts), each side on its own rows, in
// interleaved rounds (bench/harness/). Every request must succeed (a refusal
// fails the run); nothing here asserts a time.
//
// BENCH_ONLY=create or move: that write alone. BENCH_SUBTREES: the subtrees per side.
// BENCH_WITHOUT=audit,chart (PostgreSQL): parts of a write switched off in the
// database, to measure what each costs (docs/benchmark.md#what-a-create-costs):
// `audit` drops every audit record as it is inserted (so no sequencer run, no
// feed, no wake-up either), `chart` drops every write of the chart version
// (the service's alone: the bare create writes none). On PostgreSQL
// the run also prints what the database's backends waited on, per side.

import { randomBytes } from 'node:crypto';
import type { Sql } from '../src/db/database.js';
import { addAuditDropTrigger, addChartDropTrigger, prepare } from './harness/database.js';
import { startBoth } from './harness/pair.js';
import { stopAll } from './harness/processes.js';
import { cannon, CONNECTIONS, interleaved, ROUNDS, SECONDS, SHORT } from './harness/rounds.js';
import { fmt } from './harness/stats.js';
import { waitSampler } from './harness/waits.js';

/** BENCH_WITHOUT: the parts of a write switched off (see the top of this file). */
const WITHOUT = new Set((process.env.BENCH_WITHOUT ?? '').split(',').filter(Boolean));
for (const part of WITHOUT) if (part !== 'audit' && part !== 'chart') throw new Error(`BENCH_WITHOUT: ${part} is not audit or chart`);

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
  if (WITHOUT.has('audit')) await addAuditDropTrigger(sql);
  if (WITHOUT.has('chart')) await addChartDropTrigger(sql);
  return rows;
}

export async function writes(): Promise<void> {
  const prepared = await prepare(100, randomBytes(32).toString('hex'), seedWrites);
  try {
    const { service, baseline, headers } = await startBoth(prepared);
    console.log(`database: ${prepared.description}`);
    console.log(
      `${ROUNDS} interleaved rounds of ${SECONDS} s, ${CONNECTIONS} connections, ${SUBTREES} subtrees of 31 departments per side` +
        (WITHOUT.size > 0 ? `; switched off: ${[...WITHOUT].join(', ')}` : ''),
    );
    const databaseUrl = prepared.serviceEnv.DATABASE_DIRECT_URL ?? prepared.serviceEnv.DATABASE_URL;
    const waits = databaseUrl ? waitSampler(databaseUrl) : undefined;
    // The rounds' runs sampled, the warm-ups (shorter) not.
    const sampled = <T>(label: string, port: number, seconds: number, work: () => Promise<T>) =>
      waits && seconds === SECONDS ? waits.during(`${label}, ${port === service.port ? 'service' : 'baseline'}`, work) : work();
    const peaks = { service: 0, baseline: 0 };
    const sideOf = (port: number) => (port === service.port ? prepared.extra.service : prepared.extra.baseline);
    // Per side: creates name their department after a counter; the n-th move takes subtree n % SUBTREES to the other parent.
    const counters = new Map<number, { created: number; moved: number }>();
    const counter = (port: number) => counters.get(port) ?? counters.set(port, { created: 0, moved: 0 }).get(port)!;
    const only = process.env.BENCH_ONLY; // create or move
    // Moves first: tens of thousands of creates under two parents skew the planner's estimates for every walk that follows.
    if (only !== 'create')
      await interleaved('PUT /system/dept-api (move 31)', { service, baseline }, peaks, (port, pid, seconds) =>
        sampled('move', port, seconds, () =>
          cannon(port, '/system/dept-api', headers, seconds, pid, {
            method: 'PUT',
            body: () => {
              const rows = sideOf(port);
              const n = counter(port).moved++;
              const lap = Math.floor(n / SUBTREES);
              return { deptId: rows.roots[n % SUBTREES], parentId: lap % 2 === 0 ? rows.to : rows.from, deptName: `M${n % SUBTREES}` };
            },
          }),
        ),
      );
    if (only !== 'move')
      await interleaved('POST /system/dept-api (create)', { service, baseline }, peaks, (port, pid, seconds) =>
        sampled('create', port, seconds, () =>
          cannon(port, '/system/dept-api', headers, seconds, pid, {
            method: 'POST',
            body: () => ({ parentId: sideOf(port).createParent, deptName: `Created ${counter(port).created++}` }),
          }),
        ),
      );
    for (const [who, child] of [
      ['service', service],
      ['baseline', baseline],
    ] as const) {
      console.log(`${who}: ${counter(child.port).created} creates and ${counter(child.port).moved} moves sent`);
    }
    console.log(`service rss: peak ${fmt(peaks.service)} MiB | baseline rss: peak ${fmt(peaks.baseline)} MiB`);
    if (waits) {
      console.log('database backends in a transaction, per sample (pg_stat_activity every 50 ms; CPU: active, waiting on nothing):');
      for (const line of waits.report()) console.log(`  ${line}`);
      await waits.close();
    }
  } finally {
    await stopAll();
    await prepared.cleanup();
  }
}
