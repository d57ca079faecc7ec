import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { openPostgres, type Database } from '../../src/db/database.js';

/**
 * A new database on the server at `serverUrl`, dropped again by close(). Used by the tests and the benchmark.
 * With `template`, the new database is a copy of that one (CREATE DATABASE ... TEMPLATE), which must have
 * no other session connected while it is copied.
 */
export async function openFreshPostgres(serverUrl: string, prefix: string, poolSize: number, template?: string): Promise<Database> {
  // The names are ours (prefix + hex, and the template named by the global setup), never input, so they are safe in the statement text.
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = openPostgres(url.toString(), { max: poolSize });
  return {
    ...db,
    async close() {
      await db.close();
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
