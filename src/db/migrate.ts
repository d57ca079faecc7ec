import { readdir, readFile } from 'node:fs/promises';
import type { Sql } from './database.js';
import { LOCK } from './locks.js';

const SQL_DIR = new URL('../../sql/', import.meta.url);

/**
 * Applies every `sql/NNN_name.sql` not yet recorded in schema_migrations, in
 * order, in one transaction. The advisory lock makes nodes that start
 * together take turns, so each migration runs exactly once.
 */
export async function migrate(sql: Sql): Promise<string[]> {
  const files = (await readdir(SQL_DIR)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCK.migrations}, 0)`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`;
    const done = new Set((await tx<{ version: string }[]>`SELECT version FROM schema_migrations`).map((r) => r.version));
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      await tx.unsafe(await readFile(new URL(file, SQL_DIR), 'utf8'));
      await tx`INSERT INTO schema_migrations (version) VALUES (${file})`;
      applied.push(file);
    }
    return applied;
  });
}
