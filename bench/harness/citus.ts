// A fresh database on a running Citus cluster for `npm run bench -- citus`:
// made on the coordinator and on every worker (each with the extension), the
// workers joined, and dropped on every node afterwards. The cluster is one the
// operator started, e.g. `bash .ci/citus.sh start DIR` (docs/scale-out.md#starting-on-it),
// named by BENCH_CITUS_URL (its coordinator).

import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import type { CreatedDatabase } from './database.js';

const quiet = { max: 1, onnotice: () => {} } as const;

/** Each node's URL (coordinator first) with `database` as its path. */
function nodeUrl(base: string, host: string, port: number, database: string): string {
  const url = new URL(base);
  url.hostname = host;
  url.port = String(port);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function createCitusDatabase(coordinatorUrl: string): Promise<CreatedDatabase> {
  const coordinator = new URL(coordinatorUrl);
  const meta = postgres(coordinatorUrl, quiet);
  const workers = await meta<{ host: string; port: number }[]>`
    SELECT nodename AS host, nodeport AS port FROM pg_dist_node WHERE noderole = 'primary' AND groupid <> 0 ORDER BY nodeid`;
  await meta.end();
  if (workers.length === 0) throw new Error(`BENCH_CITUS_URL: ${coordinator.host} has no workers (pg_dist_node)`);
  // The name is ours (prefix + hex), never input, so it is safe in the statement text.
  const name = `bench_citus_${randomBytes(6).toString('hex')}`;
  const nodes = [{ host: coordinator.hostname, port: Number(coordinator.port || 5432) }, ...workers];
  for (const node of nodes) {
    const admin = postgres(nodeUrl(coordinatorUrl, node.host, node.port, 'postgres'), quiet);
    await admin.unsafe(`CREATE DATABASE ${name}`);
    await admin.end();
    const db = postgres(nodeUrl(coordinatorUrl, node.host, node.port, name), quiet);
    await db`CREATE EXTENSION citus`;
    await db.end();
  }
  const url = nodeUrl(coordinatorUrl, nodes[0]!.host, nodes[0]!.port, name);
  const db = postgres(url, quiet);
  await db`SELECT citus_set_coordinator_host(${nodes[0]!.host}, ${nodes[0]!.port})`;
  for (const w of workers) await db`SELECT citus_add_node(${w.host}, ${w.port})`;
  await db.end();
  let dropped: Promise<void> | undefined;
  const drop = async () => {
    for (const node of nodes) {
      const admin = postgres(nodeUrl(coordinatorUrl, node.host, node.port, 'postgres'), quiet);
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  };
  return { name, url, drop: () => (dropped ??= drop()) };
}
