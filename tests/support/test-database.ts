import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';
import { openEmbedded, openPostgres, type Database } from '../../src/db/database.js';

/**
 * A fresh, empty database for one test file: a new database on the chosen
 * PostgreSQL server (dropped afterwards), or a new in-memory PGlite.
 */
export async function openTestDatabase(): Promise<Database & { kind: string }> {
  const serverUrl = inject('databaseUrl');
  const kind = inject('databaseKind');
  if (!serverUrl) return { ...(await openEmbedded(undefined)), kind };

  // The name is ours (hex), never input, so it is safe to put into the statement text.
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = openPostgres(url.toString(), 20);
  return {
    ...db,
    kind,
    async close() {
      await db.close();
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

export { openPostgres };
