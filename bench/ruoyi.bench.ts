// `npm run bench -- ruoyi`: `dept-tenant import-ruoyi` (the built command) from
// a RuoYi-Vue-Plus 5.x source on MariaDB of BENCH_RUOYI_TENANTS (100)
// tenants with BENCH_RUOYI_DEPTS (1,000) departments and BENCH_RUOYI_USERS
// (1,000) people each: the first run (everything new), a second over the
// same source (nothing to write), and one after a change in one tenant.
// Into a fresh database on DATABASE_URL's server, else an embedded DATA_DIR.
// The source server: TEST_MYSQL_URL, else root on 127.0.0.1:3306. Nothing
// here asserts a time (docs/benchmark.md#moving-in-from-ruoyi).

import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createDatabase } from './harness/database.js';
import { SHORT } from './harness/rounds.js';
import { fmt } from './harness/stats.js';
import { load, ruoyiSource } from '../tests/support/ruoyi-source.js';
import { ruoyiRows } from '../tests/support/ruoyi-data.js';

const TENANTS = Number(process.env.BENCH_RUOYI_TENANTS ?? (SHORT ? 10 : 100));
const DEPTS = Number(process.env.BENCH_RUOYI_DEPTS ?? (SHORT ? 100 : 1000));
const USERS = Number(process.env.BENCH_RUOYI_USERS ?? (SHORT ? 100 : 1000));

function importRun(env: Record<string, string>, url: string): Promise<{ ms: number; code: number | null; output: string }> {
  const started = performance.now();
  const clean = { ...process.env };
  delete clean.DATABASE_URL;
  delete clean.DATA_DIR;
  const child = spawn(process.execPath, ['dist/cli/cli.main.js', 'import-ruoyi', '--from', url], {
    env: { ...clean, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ ms: performance.now() - started, code, output })));
}

export async function ruoyi(): Promise<void> {
  const source = await ruoyiSource('mysql');
  const serverUrl = process.env.DATABASE_URL;
  const target = serverUrl ? await createDatabase(serverUrl, 'bench_ruoyi') : undefined;
  const dataDir = target ? undefined : await mkdtemp(join(tmpdir(), 'bench-ruoyi-'));
  const env: Record<string, string> = target ? { DATABASE_URL: target.url } : { DATA_DIR: dataDir! };
  try {
    const loading = performance.now();
    await load(source, ruoyiRows({ tenants: TENANTS, depts: DEPTS, users: USERS }));
    console.log(
      `source: ${TENANTS} tenants, ${TENANTS * DEPTS} departments, ${TENANTS * USERS} people on MariaDB (loaded in ${fmt((performance.now() - loading) / 1000, 1)} s)`,
    );
    console.log(`target: ${target ? 'PostgreSQL' : 'the embedded database'}`);
    const runs: [string, () => Promise<void>][] = [
      ['first run (everything new)', async () => {}],
      ['second run (nothing changed)', async () => {}],
      [
        'after a change (one tenant)',
        () =>
          source
            .exec("UPDATE sys_dept SET dept_name = CONCAT('Renamed ', order_num, '-', dept_id % 100000) WHERE tenant_id = ?", ['100001'])
            .then(() => undefined),
      ],
    ];
    for (const [label, before] of runs) {
      await before();
      const r = await importRun(env, source.url);
      if (r.code !== 0) throw new Error(`${label}: exit ${r.code}\n${r.output}`);
      console.log(`${label}: ${fmt(r.ms / 1000, 1)} s`);
      if (label.startsWith('first'))
        console.log(
          r.output
            .split('\n')
            .filter((l) => /^\S.*\s\d+\s+\d+\s+\d+\s+\d+$/.test(l))
            .join('\n'),
        );
    }
  } finally {
    await source.dispose();
    await target?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}
