import { inject } from 'vitest';
import { openEmbedded, type Database } from '../../src/db/database.js';
import { openFreshPostgres } from './fresh-postgres.js';

/**
 * A fresh, empty database for one test file: a new database on the chosen
 * PostgreSQL server (dropped afterwards), or a new in-memory PGlite.
 */
export async function openTestDatabase(): Promise<Database & { kind: string }> {
  const serverUrl = inject('databaseUrl');
  const kind = inject('databaseKind');
  if (!serverUrl) return { ...(await openEmbedded(undefined)), kind };

  return { ...(await openFreshPostgres(serverUrl, 'test', 20)), kind };
}
