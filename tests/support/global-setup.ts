import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { bootstrap } from '../../src/bootstrap.js';
import { openEmbedded, openPostgres } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { distributeSchema } from '../../src/db/citus.js';
import { citusNodes, closeTemplate, createCitusDatabase, dropCitusDatabase, onDatabase } from './citus-cluster.js';
import { parseDatabaseUrl } from '../../src/db/url.js';
import { buildDist } from './build.js';
import { ADMIN_PASSWORD } from './constants.js';
import { startContainerIfAvailable } from './container.js';
import { poolerPrepare } from './fresh-postgres.js';
import { recordedPoolIn } from './statement-log.js';
import { checkTenantStatements } from './tenant-statements.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Server-level PostgreSQL URL the test files create their databases in; '' for embedded PGlite. */
    databaseUrl: string;
    /** TEST_POOLER_URL: a PgBouncer in transaction mode in front of databaseUrl's server, which the apps go through; '' for none. */
    poolerUrl: string;
    databaseKind: string;
    /** PostgreSQL: the migrated, bootstrapped database each test file copies (CREATE DATABASE ... TEMPLATE). */
    templateDatabase: string;
    /** PGlite: the migrated, bootstrapped data directory as a tarball file each test file's PGlite loads. */
    templateTarball: string;
    /** PGlite: an initialised but empty data directory, copied for each spawned service (tests/support/service.ts). */
    emptyClusterDir: string;
    /** PostgreSQL: the directory the workers record the app's statements in (tests/support/statement-log.ts); '' on PGlite. */
    statementLogDir: string;
    /** TEST_CITUS_URL: the cluster's nodes, coordinator first, as JSON (tests/support/citus-cluster.ts); '' on any other database. */
    citusNodes: string;
  }
}

/**
 * Chooses the database server for the whole run, as docs/testing.md says:
 * DATABASE_URL when set, else PostgreSQL in a testcontainers container when
 * a Docker engine answers, else the embedded PGlite. Each test file then
 * makes its own database there (tests/support/test-database.ts), as a copy of
 * a template this setup migrates (src/db/migrate.ts) and bootstraps
 * (src/bootstrap.ts) once per run. Meanwhile it compiles src/ to dist/ for
 * the spawned services (tests/support/build.ts).
 */
export default async function setup(project: TestProject) {
  const teardown: (() => Promise<void>)[] = [];
  const cleanUp = async () => {
    for (const step of teardown.reverse()) await step().catch((err: unknown) => console.error('[tests] teardown:', err));
  };
  const build = buildDist();
  try {
    await Promise.all([build, prepareDatabase(project, teardown)]);
  } catch (err) {
    await build.catch(() => {});
    await cleanUp();
    throw err;
  }
  return cleanUp;
}

async function prepareDatabase(project: TestProject, teardown: (() => Promise<void>)[]): Promise<void> {
  project.provide('templateDatabase', '');
  project.provide('templateTarball', '');
  project.provide('emptyClusterDir', '');
  project.provide('poolerUrl', '');
  project.provide('statementLogDir', '');
  project.provide('citusNodes', '');
  let url = process.env.DATABASE_URL;
  const poolerUrl = process.env.TEST_POOLER_URL;
  const citusUrl = process.env.TEST_CITUS_URL;
  if (citusUrl) {
    if (poolerUrl) throw new Error('TEST_CITUS_URL and TEST_POOLER_URL: one at a time');
    const nodes = await citusNodes(citusUrl);
    project.provide('databaseUrl', citusUrl);
    project.provide('citusNodes', JSON.stringify(nodes));
    project.provide('databaseKind', `citus (TEST_CITUS_URL, ${nodes.length - 1} workers)`);
    console.log(`[tests] database: a Citus cluster from TEST_CITUS_URL, a coordinator and ${nodes.length - 1} workers`);
    // No plan judge here: Citus itself refuses a statement that would run on several shards (src/db/citus.ts).
    project.provide('templateDatabase', await citusTemplate(nodes, teardown));
    return;
  }
  if (poolerUrl) {
    if (!url) throw new Error('TEST_POOLER_URL needs DATABASE_URL: the server the pooler forwards to, for the template and LISTEN');
    await poolerAnswers(poolerUrl);
    project.provide('poolerUrl', poolerUrl);
    project.provide('databaseKind', 'postgresql (DATABASE_URL) through a pooler (TEST_POOLER_URL)');
    console.log(`[tests] database: PostgreSQL from DATABASE_URL; the apps go through the pooler at TEST_POOLER_URL, DB_PREPARE=${poolerPrepare()}`);
  } else if (url) {
    project.provide('databaseKind', 'postgresql (DATABASE_URL)');
    console.log('[tests] database: PostgreSQL from DATABASE_URL');
  } else {
    const container = await startContainerIfAvailable();
    if (container) {
      teardown.push(container.stop);
      url = container.url;
      project.provide('databaseKind', `postgresql (testcontainers ${container.description})`);
      console.log(`[tests] database: PostgreSQL in container ${container.description}`);
    }
  }
  if (url) {
    project.provide('databaseUrl', url);
    // Every statement the app sends is recorded, and once every file has run
    // each distinct one is checked for its tenant filter (docs/scale-out.md#the-check).
    const statementLog = await mkdtemp(join(tmpdir(), 'dept-statements-'));
    teardown.push(() => rm(statementLog, { recursive: true, force: true }));
    project.provide('statementLogDir', statementLog);
    const template = await postgresTemplate(url, teardown, statementLog);
    project.provide('templateDatabase', template);
    teardown.push(() => checkTenantStatements(url, template, statementLog));
    return;
  }
  project.provide('databaseUrl', '');
  project.provide('databaseKind', 'pglite');
  console.log('[tests] database: embedded PGlite (no DATABASE_URL, no Docker engine)');
  const { tarball, emptyCluster } = await pgliteTemplate(teardown);
  project.provide('templateTarball', tarball);
  project.provide('emptyClusterDir', emptyCluster);
}

/**
 * Fails the run at once, naming the pooler, when it does not answer, rather
 * than every test file after its own wait. It asks for the URL's own database
 * (never the template: a pooler keeps its server connections open, and
 * CREATE DATABASE ... TEMPLATE refuses while anyone is connected).
 */
async function poolerAnswers(poolerUrl: string): Promise<void> {
  const pooler = postgres(poolerUrl, { max: 1, prepare: false, connect_timeout: 10, onnotice: () => {} });
  try {
    await pooler`SELECT 1`;
  } catch (err) {
    const { hosts } = parseDatabaseUrl(poolerUrl);
    throw new Error(
      `TEST_POOLER_URL (${hosts.map((h) => `${h.host}:${h.port}`).join(',')}) does not answer: ${err instanceof Error ? err.message : err}`,
      {
        cause: err,
      },
    );
  } finally {
    await pooler.end();
  }
}

/**
 * A database of a name unique to this run (other runs may share the server),
 * migrated and bootstrapped, with every connection to it closed again, since
 * CREATE DATABASE ... TEMPLATE refuses while anyone is connected to it.
 * Dropped at teardown.
 */
async function postgresTemplate(serverUrl: string, teardown: (() => Promise<void>)[], statementLog: string): Promise<string> {
  const name = `tpl_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  teardown.push(async () => {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  // The first start's statements are the app's too: recorded with the rest.
  const db = openPostgres(url.toString(), { max: 1, ...recordedPoolIn(statementLog) });
  try {
    await migrate(db.sql);
    await bootstrap(db.sql, ADMIN_PASSWORD);
  } finally {
    await db.close();
  }
  return name;
}

/**
 * The template on a Citus cluster: a database on every node, migrated,
 * placed (src/db/citus.ts) and bootstrapped as the service's own start does,
 * every connection closed again. Small shard counts: the suite's tenants are
 * few, and every copy and drop handles each shard.
 */
async function citusTemplate(nodes: string[], teardown: (() => Promise<void>)[]): Promise<string> {
  const name = `tpl_${randomBytes(6).toString('hex')}`;
  await createCitusDatabase(nodes, name);
  teardown.push(() => dropCitusDatabase(nodes, name));
  const db = openPostgres(onDatabase(nodes[0]!, name), { max: 1, citus: true });
  try {
    await db.sql`SET citus.shard_count = 4`;
    await migrate(db.sql);
    await distributeSchema(db.sql);
    await bootstrap(db.sql, ADMIN_PASSWORD);
  } finally {
    await db.close();
  }
  await closeTemplate(nodes, name);
  return name;
}

/**
 * An in-memory PGlite, dumped twice: right after initdb (the empty cluster,
 * unpacked into a directory for the spawned services) and after the
 * migrations and the bootstrap (the tarball each test file loads). Both live
 * in a temporary directory removed at teardown.
 */
async function pgliteTemplate(teardown: (() => Promise<void>)[]): Promise<{ tarball: string; emptyCluster: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'dept-tests-'));
  teardown.push(() => rm(dir, { recursive: true, force: true }));
  const db = await openEmbedded(undefined);
  let empty: Blob;
  try {
    empty = await db.dumpDataDir();
    await migrate(db.sql);
    await bootstrap(db.sql, ADMIN_PASSWORD);
    const tarball = join(dir, 'template.tar');
    await writeFile(tarball, new Uint8Array(await (await db.dumpDataDir()).arrayBuffer()));
  } finally {
    await db.close();
  }
  const emptyCluster = join(dir, 'empty-cluster');
  const { PGlite } = await import('@electric-sql/pglite');
  const cluster = await PGlite.create(emptyCluster, { loadDataDir: empty });
  await cluster.close();
  return { tarball: join(dir, 'template.tar'), emptyCluster };
}
