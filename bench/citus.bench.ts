// `npm run bench -- citus`: the same tenant's reads and writes on a Citus
// cluster against the same on one PostgreSQL of this machine: the built
// service on each (two processes, two databases made for the run), the
// platform tenant with BENCH_DEPTS (1,000) departments and BENCH_TENANTS (100)
// child tenants on each, driven over real HTTP by autocannon in interleaved
// rounds (bench/harness/). Figures are printed as ratios (Citus over one
// PostgreSQL); nothing here asserts a time.
//
// DATABASE_URL: the one PostgreSQL. BENCH_CITUS_URL: a running cluster's
// coordinator, e.g. from `bash .ci/citus.sh start DIR` (a coordinator and two
// workers on loopback, docs/scale-out.md#starting-on-it). The cluster's nodes
// run with synchronous_commit off (.ci/citus.sh); the PostgreSQL database is
// made with the same, so a commit's wait for its WAL flush is on neither side.
// BENCH_ONLY=id, tree, tenants, audit or create: that target alone.

import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { bootstrap } from '../src/bootstrap.js';
import { distributeSchema } from '../src/db/citus.js';
import { openPostgres } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { createCitusDatabase } from './harness/citus.js';
import { ADMIN_PASSWORD, createDatabase, seed, type CreatedDatabase } from './harness/database.js';
import { get } from './harness/pair.js';
import { anyFreePort, cleanupOnInterrupt, startService, stopAll, waitReady, type Child } from './harness/processes.js';
import { cannon, CONNECTIONS, interleaved, ROUNDS, SECONDS, SHORT } from './harness/rounds.js';

const DEPTS = Number(process.env.BENCH_DEPTS ?? 1_000);
const TENANTS = Number(process.env.BENCH_TENANTS ?? (SHORT ? 20 : 100));
type Side = 'citus' | 'postgresql';

/** Migrated, placed on the cluster (Citus), bootstrapped and seeded, as the service's own start would leave it. */
async function prepareSide(db: CreatedDatabase, side: Side): Promise<{ leaf: number; parent: number }> {
  if (side === 'postgresql') {
    const admin = postgres(db.url, { max: 1, onnotice: () => {} });
    await admin.unsafe(`ALTER DATABASE ${db.name} SET synchronous_commit = off`);
    await admin.end();
  }
  const { sql, close } = openPostgres(db.url, { max: 2 });
  try {
    await migrate(sql);
    if (side === 'citus') await distributeSchema(sql);
    await bootstrap(sql, ADMIN_PASSWORD);
    const ids = await seed(sql, DEPTS);
    return { leaf: ids.leaf, parent: ids.target };
  } finally {
    await close();
  }
}

async function login(child: Child): Promise<Record<string, string>> {
  const res = await fetch(`http://127.0.0.1:${child.port}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD }),
  });
  const token = ((await res.json()) as { data: { access_token: string } }).data.access_token;
  return { authorization: `Bearer ${token}` };
}

/** TENANTS child tenants through the API, four at a time: their records fill the audit list too. */
async function seedTenants(child: Child, headers: Record<string, string>): Promise<void> {
  let next = 0;
  const one = async () => {
    for (let i = next++; i < TENANTS; i = next++) {
      const res = await fetch(`http://127.0.0.1:${child.port}/system/tenant-api`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ tenantName: `Bench ${i}`, companyName: `Bench Company ${i}`, contactUserName: 'Bench', contactPhone: '13800000000' }),
      });
      if (res.status !== 200) throw new Error(`tenant create on ${child.name}: ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all([one(), one(), one(), one()]);
}

export async function citus(): Promise<void> {
  const server = process.env.DATABASE_URL;
  const coordinator = process.env.BENCH_CITUS_URL;
  if (!server || !coordinator)
    throw new Error('citus: set DATABASE_URL (one PostgreSQL) and BENCH_CITUS_URL (a Citus coordinator, e.g. from `bash .ci/citus.sh start DIR`)');
  const jwtSecret = randomBytes(32).toString('hex');
  const dbs: Record<Side, CreatedDatabase> = { citus: await createCitusDatabase(coordinator), postgresql: await createDatabase(server, 'bench') };
  const cleanup = () => Promise.all([dbs.citus.drop(), dbs.postgresql.drop()]).then(() => undefined);
  cleanupOnInterrupt(cleanup);
  try {
    const ids = { citus: await prepareSide(dbs.citus, 'citus'), postgresql: await prepareSide(dbs.postgresql, 'postgresql') };
    const children = {} as Record<Side, Child>;
    for (const side of ['citus', 'postgresql'] as const) {
      children[side] = startService(side, [], await anyFreePort(), {
        ADMIN_PASSWORD,
        JWT_SECRET: jwtSecret,
        DATABASE_URL: dbs[side].url,
        MANAGEMENT_PORT: '0',
      });
      await waitReady(children[side], '/readyz');
    }
    const headers = { citus: await login(children.citus), postgresql: await login(children.postgresql) };
    await Promise.all([seedTenants(children.citus, headers.citus), seedTenants(children.postgresql, headers.postgresql)]);
    console.log(
      `Citus at ${new URL(coordinator).host} (database ${dbs.citus.name}) against PostgreSQL at ${new URL(server).host} (database ${dbs.postgresql.name}); ` +
        `${DEPTS} departments and ${TENANTS} tenants each; ${ROUNDS} interleaved rounds of ${SECONDS} s, ${CONNECTIONS} connections`,
    );
    const sideOf = (port: number): Side => (port === children.citus.port ? 'citus' : 'postgresql');
    let made = 0;
    const targets: { key: string; label: string; run: (port: number, pid: number | undefined, seconds: number) => ReturnType<typeof cannon> }[] = [
      {
        key: 'id',
        label: 'GET /system/dept-api/{id}',
        run: (port, pid, s) => cannon(port, `/system/dept-api/${ids[sideOf(port)].leaf}`, headers[sideOf(port)], s, pid),
      },
      { key: 'tree', label: `GET tree of ${DEPTS}`, run: (port, pid, s) => cannon(port, '/system/dept-api/tree', headers[sideOf(port)], s, pid) },
      {
        key: 'tenants',
        label: 'tenant list, first page',
        run: (port, pid, s) => cannon(port, '/system/tenant-api/list?pageNum=1&pageSize=10', headers[sideOf(port)], s, pid),
      },
      {
        key: 'audit',
        label: 'audit list, first page',
        run: (port, pid, s) => cannon(port, '/system/audit-api/list?pageNum=1&pageSize=10', headers[sideOf(port)], s, pid),
      },
      {
        key: 'create',
        label: 'POST /system/dept-api',
        run: (port, pid, s) =>
          cannon(port, '/system/dept-api', headers[sideOf(port)], s, pid, {
            method: 'POST',
            body: () => ({ parentId: ids[sideOf(port)].parent, deptName: `Created ${made++}` }),
          }),
      },
    ];
    // Each answers the same first: the tree's size and the tenant list's total.
    for (const side of ['citus', 'postgresql'] as const) {
      const tenants = JSON.parse((await get(children[side].port, '/system/tenant-api/list?pageNum=1&pageSize=10', headers[side])).body).data;
      console.log(
        `${side}: tenant list total ${tenants.total}, tree ${(await get(children[side].port, '/system/dept-api/tree', headers[side])).bytes} bytes`,
      );
    }
    const peaks = { service: 0, baseline: 0 };
    const only = process.env.BENCH_ONLY;
    for (const target of targets.filter((t) => !only || t.key === only)) {
      await interleaved(target.label, { service: children.citus, baseline: children.postgresql }, peaks, target.run, {
        service: 'citus',
        baseline: 'postgresql',
      });
    }
  } finally {
    await stopAll();
    await cleanup();
  }
}
