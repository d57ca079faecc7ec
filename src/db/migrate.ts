import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import type { Sql } from './database.js';
import { LOCK } from './locks.js';
import { transaction } from './retry.js';

const SQL_DIR = new URL('../../sql/', import.meta.url);

/**
 * Numbers deliberately absent from sql/ (sql/README.md says why). Any other
 * gap in the sequence stops the start, and so does a file that takes one of
 * these numbers: numbered below migrations that databases already ran, it
 * would run after them there but before them on a new database.
 *
 * 003: the security, audit and chart-version migrations were numbered at the
 * same time on three branches started from the same commit (002, 004, 005);
 * none took 003, and the rest of that round merged without a migration, so
 * no file has ever had the number.
 */
const SKIPPED: ReadonlySet<number> = new Set([3]);

const FILE = /^(\d+)_.+\.sql$/;

/** Why the service cannot start on this database with these migration files. */
export class MigrationError extends Error {}

/**
 * The migration files in the order they run, after checking that their
 * numbers are unique and consecutive except for the `skipped` ones.
 */
export function checkSequence(files: readonly string[], skipped: ReadonlySet<number> = SKIPPED): string[] {
  const byNumber = new Map<number, string[]>();
  for (const file of files) {
    const match = FILE.exec(file);
    if (!match) continue;
    const n = Number(match[1]);
    byNumber.set(n, [...(byNumber.get(n) ?? []), file]);
  }
  const problems: string[] = [];
  const highest = Math.max(0, ...byNumber.keys());
  for (let n = 1; n <= highest; n++) {
    const same = byNumber.get(n);
    if (same && same.length > 1) problems.push(`${same.map((f) => `sql/${f}`).join(' and ')} share the number ${n}`);
    if (same && skipped.has(n)) {
      problems.push(
        `sql/${same[0]} takes the number ${n}, which is left out on purpose (src/db/migrate.ts, SKIPPED): number a new migration after the highest one`,
      );
    }
    if (!same && !skipped.has(n)) {
      problems.push(
        `sql/ has no migration numbered ${n} (below ${highest}): restore it, or if the gap is meant, list ${n} in SKIPPED in src/db/migrate.ts with the reason`,
      );
    }
  }
  if (problems.length > 0) throw new MigrationError(`The migration files in sql/ are out of sequence:\n  ${problems.join('\n  ')}`);
  return [...byNumber].sort(([a], [b]) => a - b).flatMap(([, same]) => same);
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/**
 * Applies every `sql/NNN_name.sql` not yet recorded in schema_migrations, in
 * order, in one transaction. The advisory lock makes nodes that start
 * together take turns, so each migration runs exactly once.
 *
 * Each applied migration is recorded with the sha256 of the file's bytes. A
 * recorded migration whose file now has other bytes, or no longer exists,
 * stops the start (MigrationError) before anything is applied: the database
 * was built from a file that is not the one here. Rows recorded before the
 * checksum existed get theirs from the file the first time they are seen.
 */
export async function migrate(sql: Sql, dir: URL = SQL_DIR): Promise<string[]> {
  const files = checkSequence(await readdir(dir));
  const contents = new Map<string, { bytes: Buffer; checksum: string }>();
  for (const file of files) {
    const bytes = await readFile(new URL(file, dir));
    contents.set(file, { bytes, checksum: sha256(bytes) });
  }
  return transaction(sql, async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCK.migrations}, 0)`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`;
    await tx`ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text`;
    const recorded = await tx<{ version: string; checksum: string | null }[]>`SELECT version, checksum FROM schema_migrations ORDER BY version`;
    const problems: string[] = [];
    for (const { version, checksum } of recorded) {
      const file = contents.get(version);
      if (!file) {
        problems.push(
          `sql/${version} is recorded as applied to this database, but there is no such file. ` +
            'This code is older than the database, or the file was removed or renamed after it ran. ' +
            'Start a version of the service that has the file, or restore the file as it was; an applied migration is never removed or renamed.',
        );
      } else if (checksum === null) {
        await tx`UPDATE schema_migrations SET checksum = ${file.checksum} WHERE version = ${version}`;
      } else if (checksum !== file.checksum) {
        problems.push(
          `sql/${version} was edited after it was applied to this database: ` +
            `applied with sha256 ${checksum}, the file now has sha256 ${file.checksum}. ` +
            'A database that ran a migration never runs it again, so an edit reaches new databases only. ' +
            `Restore the file as it was applied (git log -p -- sql/${version}) and put the change in a new migration numbered after the highest one in sql/.`,
        );
      }
    }
    if (problems.length > 0) throw new MigrationError(problems.join('\n'));

    const done = new Set(recorded.map((r) => r.version));
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      const { bytes, checksum } = contents.get(file)!;
      await tx.unsafe(bytes.toString('utf8'));
      await tx`INSERT INTO schema_migrations (version, checksum) VALUES (${file}, ${checksum})`;
      applied.push(file);
    }
    return applied;
  });
}
