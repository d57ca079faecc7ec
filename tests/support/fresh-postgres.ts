import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { openPostgres, type Database } from '../../src/db/database.js';

/** A new database on the server at `serverUrl`, dropped again by close(). Used by the tests and the benchmark. */
export async function openFreshPostgres(serverUrl: string, prefix: string, poolSize: number): Promise<Database> {
  // The name is ours (prefix + hex), never input, so it is safe to put into the statement text.
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = openPostgres(url.toString(), poolSize);
  return {
    ...db,
    async close() {
      await db.close();
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
