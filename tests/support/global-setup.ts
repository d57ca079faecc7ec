import type { TestProject } from 'vitest/node';
import { startContainerIfAvailable } from './container.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Server-level PostgreSQL URL the test files create their databases in; '' for embedded PGlite. */
    databaseUrl: string;
    databaseKind: string;
  }
}

/**
 * Chooses the database server for the whole run, as docs/testing.md says:
 * DATABASE_URL when set, else PostgreSQL in a testcontainers container when
 * a Docker engine answers, else the embedded PGlite. Each test file then
 * makes its own fresh database there (tests/support/test-database.ts).
 */
export default async function setup(project: TestProject) {
  const url = process.env.DATABASE_URL;
  if (url) {
    project.provide('databaseUrl', url);
    project.provide('databaseKind', 'postgresql (DATABASE_URL)');
    console.log('[tests] database: PostgreSQL from DATABASE_URL');
    return;
  }
  const container = await startContainerIfAvailable();
  if (container) {
    project.provide('databaseUrl', container.url);
    project.provide('databaseKind', `postgresql (testcontainers ${container.description})`);
    console.log(`[tests] database: PostgreSQL in container ${container.description}`);
    return container.stop;
  }
  project.provide('databaseUrl', '');
  project.provide('databaseKind', 'pglite');
  console.log('[tests] database: embedded PGlite (no DATABASE_URL, no Docker engine)');
}
