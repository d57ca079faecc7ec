import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { bootstrap } from '../../src/bootstrap.js';
import { openEmbedded, openPostgres } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { buildDist } from './build.js';
import { ADMIN_PASSWORD } from './constants.js';
import { startContainerIfAvailable } from './container.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Server-level PostgreSQL URL the test files create their databases in; '' for embedded PGlite. */
    databaseUrl: string;
    databaseKind: string;
    /** PostgreSQL: the migrated, bootstrapped database each test file copies (CREATE DATABASE ... TEMPLATE). */
    templateDatabase: string;
    /** PGlite: the migrated, bootstrapped data directory as a tarball file each test file's PGlite loads. */
    templateTarball: string;
    /** PGlite: an initialised but empty data directory, copied for each spawned service (tests/support/service.ts). */
    emptyClusterDir: string;
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
  let url = process.env.DATABASE_URL;
  if (url) {
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
    project.provide('templateDatabase', await postgresTemplate(url, teardown));
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
 * A database of a name unique to this run (other runs may share the server),
 * migrated and bootstrapped, with every connection to it closed again, since
 * CREATE DATABASE ... TEMPLATE refuses while anyone is connected to it.
 * Dropped at teardown.
 */
async function postgresTemplate(serverUrl: string, teardown: (() => Promise<void>)[]): Promise<string> {
  const name = `tpl_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  teardown.push(async () => {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = openPostgres(url.toString(), { max: 1 });
  try {
    await migrate(db.sql);
    await bootstrap(db.sql, ADMIN_PASSWORD);
  } finally {
    await db.close();
  }
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
