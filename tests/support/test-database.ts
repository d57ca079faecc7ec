import { readFile } from 'node:fs/promises';
import { inject } from 'vitest';
import { openEmbedded, type Database } from '../../src/db/database.js';
import { openFreshPostgres } from './fresh-postgres.js';

/**
 * A database of its own for one test file: a new database on the chosen
 * PostgreSQL server (dropped afterwards), or a new in-memory PGlite.
 * By default it starts as a copy of the run's template (global-setup.ts):
 * migrated, and bootstrapped with ADMIN_PASSWORD (tests/support/constants.ts).
 * `empty: true` gives a database nothing has touched, for tests of the
 * migrations, the bootstrap or a first start.
 */
export async function openTestDatabase(options: { empty?: boolean } = {}): Promise<Database & { kind: string }> {
  const serverUrl = inject('databaseUrl');
  const kind = inject('databaseKind');
  if (!serverUrl) {
    const tarball = options.empty ? undefined : inject('templateTarball');
    const loadDataDir = tarball ? new Blob([await readFile(tarball)]) : undefined;
    return { ...(await openEmbedded(undefined, { loadDataDir })), kind };
  }
  const template = options.empty ? undefined : inject('templateDatabase');
  return { ...(await openFreshPostgres(serverUrl, 'test', 20, template || undefined)), kind };
}
