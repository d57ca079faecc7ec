import postgres from 'postgres';

// The suite's Citus pass (docs/testing.md#on-citus): TEST_CITUS_URL names a
// coordinator (.ci/citus.sh starts one with two workers), whose database has
// the citus extension and the workers joined. A test file's database there
// is one database of the same name on every node: Citus reaches a worker's
// shards in the database named as the coordinator's. A copy of the run's
// template is made on every node, so the copy's metadata on the coordinator
// and its shards on the workers match as they did in the template.

/** The nodes of the cluster, coordinator first, as server URLs (their path names a database to connect to). */
export async function citusNodes(coordinatorUrl: string): Promise<string[]> {
  const admin = postgres(coordinatorUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await admin<{ host: string; port: number }[]>`
      SELECT nodename AS host, nodeport AS port FROM pg_dist_node WHERE isactive ORDER BY groupid = 0 DESC, nodeport`;
    const coordinator = new URL(coordinatorUrl);
    const urls = rows.map(({ host, port }) => {
      const url = new URL(coordinatorUrl);
      url.hostname = host;
      url.port = String(port);
      return url.toString();
    });
    // A cluster whose coordinator is not in its own metadata yet (citus_set_coordinator_host not called) still has one.
    return urls.some((u) => new URL(u).port === coordinator.port) ? urls : [coordinatorUrl, ...urls];
  } finally {
    await admin.end();
  }
}

/** `url` with its database `name`. */
export function onDatabase(url: string, name: string): string {
  const on = new URL(url);
  on.pathname = `/${name}`;
  return on.toString();
}

async function onEvery(nodes: string[], statement: (node: postgres.Sql, index: number) => Promise<unknown>): Promise<void> {
  await Promise.all(
    nodes.map(async (url, index) => {
      const node = postgres(url, { max: 1, onnotice: () => {} });
      try {
        await statement(node, index);
      } finally {
        await node.end();
      }
    }),
  );
}

/**
 * Database `name` on every node: a copy of `template` (every node's own
 * copy), or a new one with the citus extension and the workers joined, on
 * which the service's start places the tables itself. The names are ours
 * (prefix + hex), never input.
 */
export async function createCitusDatabase(nodes: string[], name: string, template?: string): Promise<void> {
  await onEvery(nodes, async (node) => {
    // One node at a time decides: the coordinator must not create it on the workers itself.
    await node.unsafe(`SET citus.enable_create_database_propagation = off`).catch(() => {});
    await node.unsafe(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  });
  if (template) {
    // Citus records the database itself among its distributed objects, by its oid: the copy names its template
    // there, which a node added later (citus_add_node syncs that record) does not have. Each copy names itself.
    await onEvery(nodes, async (_node, index) => {
      const db = postgres(onDatabase(nodes[index]!, name), { max: 1, onnotice: () => {} });
      try {
        await db`
          UPDATE pg_catalog.pg_dist_object SET objid = (SELECT oid FROM pg_database WHERE datname = current_database())
          WHERE classid = 'pg_database'::regclass AND objid = (SELECT oid FROM pg_database WHERE datname = ${template})`;
      } finally {
        await db.end();
      }
    });
    return;
  }
  await onEvery(nodes, async (_node, index) => {
    const db = postgres(onDatabase(nodes[index]!, name), { max: 1, onnotice: () => {} });
    try {
      await db`CREATE EXTENSION citus`;
    } finally {
      await db.end();
    }
  });
  const coordinator = postgres(onDatabase(nodes[0]!, name), { max: 1, onnotice: () => {} });
  try {
    const { hostname, port } = new URL(nodes[0]!);
    await coordinator`SELECT citus_set_coordinator_host(${hostname}, ${Number(port)})`;
    for (const worker of nodes.slice(1)) {
      const url = new URL(worker);
      await coordinator`SELECT citus_add_node(${url.hostname}, ${Number(url.port)})`;
    }
  } finally {
    await coordinator.end();
  }
}

/**
 * Makes database `name` a template on every node: no connection may open
 * to it, and those open (Citus's maintenance daemon keeps one to every
 * database with the extension) are ended, since CREATE DATABASE ... TEMPLATE
 * refuses while anyone is connected to the template.
 */
export async function closeTemplate(nodes: string[], name: string): Promise<void> {
  await onEvery(nodes, async (node) => {
    await node.unsafe(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
    await node`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid()`;
    for (let i = 0; i < 50; i++) {
      const [row] = await node<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${name}`;
      if (row!.n === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  });
}

/** Drops database `name` on every node, ending the sessions still in it. */
export async function dropCitusDatabase(nodes: string[], name: string): Promise<void> {
  await onEvery(nodes, (node) => node.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}
