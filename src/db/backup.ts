import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Db, Sql } from './database.js';

/**
 * A logical backup of the service's data (docs/operations.md#backup-and-restore):
 * every table of the service's schema as JSON, and its sequences, in one
 * file, read from one snapshot. It is what the embedded mode's operators copy
 * aside, and it restores into either kind of database: the embedded one, or a
 * PostgreSQL of the same migrations.
 *
 * The file is JSON lines: a header (format, the migrations the data was
 * written under), one line per table with its rows as PostgreSQL's json_agg
 * wrote them, and the sequences last. Rows never pass through JavaScript
 * numbers: the 19-digit tenant ids would lose digits there.
 *
 * A restore replaces everything in one transaction, so the service's readers
 * see the data before or after it, never between. Foreign keys and triggers
 * are off while the rows go in (session_replication_role = replica, which
 * needs a superuser or, from PostgreSQL 15, GRANT SET ON PARAMETER): the rows
 * were consistent when they were read, and the triggers' own tables come
 * back from the file too. Two things do not go back in time:
 * - sequences move only forward, so no id the service handed out after the
 *   backup is handed out again for another record;
 * - the versions behind the caches (VERSIONS) are renumbered past every value
 *   used before, so no node's cached chart or tenant page can match one again.
 * A NOTIFY on RESTORED_CHANNEL, sent at commit, tells every node sharing the
 * database to drop its session cache (restore.plugin.ts).
 */
const BACKUP_FORMAT = 'dept-tenant-backup';
const FORMAT_VERSION = 1;
/** Bookkeeping of the migrations: compared, never restored. */
const MIGRATIONS = 'schema_migrations';
export const RESTORED_CHANNEL = 'dept_tenant_restored';
/** Tables of versions behind per-node caches, with the sequence that numbers them. */
const VERSIONS: Record<string, string> = {
  dept_chart_version: 'dept_chart_version_seq',
  sys_tenant_list_version: 'sys_tenant_list_version_seq',
};

class BackupError extends Error {}

export interface BackupSummary {
  tables: number;
  rows: number;
}

interface Header {
  format: string;
  version: number;
  createdAt: string;
  migrations: string[];
}

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

async function tablesOf(db: Db): Promise<string[]> {
  const rows = await db<{ name: string }[]>`
    SELECT c.relname AS name FROM pg_class c
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> ${MIGRATIONS}
    ORDER BY c.relname`;
  return rows.map((r) => r.name);
}

async function migrationsOf(db: Db): Promise<string[]> {
  const rows = await db<{ version: string }[]>`SELECT version FROM schema_migrations ORDER BY version`;
  return rows.map((r) => r.version);
}

/** Writes the backup to `file`, read from one snapshot. */
export async function backup(sql: Sql, file: string): Promise<BackupSummary> {
  const out = createWriteStream(file, { mode: 0o600 });
  const write = async (line: string) => {
    if (!out.write(line + '\n')) await once(out, 'drain');
  };
  let summary: BackupSummary = { tables: 0, rows: 0 };
  try {
    await sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
      const header: Header = {
        format: BACKUP_FORMAT,
        version: FORMAT_VERSION,
        createdAt: new Date().toISOString(),
        migrations: await migrationsOf(tx),
      };
      await write(JSON.stringify(header));
      // One statement for every table, one for the sequences: on the embedded database each round trip counts.
      const tables = await tablesOf(tx);
      const columns = tables.map(
        // json_agg puts a line break between rows; a JSON string never holds a raw one.
        (table, i) =>
          `(SELECT replace(coalesce(json_agg(t), '[]')::text, E'\\n', '') FROM ${ident(table)} t) AS t${i}, (SELECT count(*)::int FROM ${ident(table)}) AS n${i}`,
      );
      const [read] =
        tables.length > 0
          ? await tx.unsafe<Record<string, string | number>[]>(`SELECT ${columns.join(', ')}`)
          : [{} as Record<string, string | number>];
      for (const [i, table] of tables.entries()) {
        await write(`{"table":${JSON.stringify(table)},"rows":${read![`t${i}`] as string}}`);
        summary = { tables: summary.tables + 1, rows: summary.rows + (read![`n${i}`] as number) };
      }
      // last_value is null for a sequence never used: nothing to carry.
      const used = await tx<{ name: string; last: string }[]>`
        SELECT sequencename AS name, last_value::text AS last FROM pg_sequences WHERE schemaname = current_schema() AND last_value IS NOT NULL ORDER BY 1`;
      const sequences = Object.fromEntries(used.map((s) => [s.name, s.last]));
      await write(JSON.stringify({ sequences }));
    });
  } finally {
    out.end();
    await once(out, 'close');
  }
  return summary;
}

/** Replaces all of the service's data with the backup in `file`, in one transaction. */
export async function restore(sql: Sql, file: string): Promise<BackupSummary> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity })[Symbol.asyncIterator]();
  const first = await lines.next();
  const header = parseHeader(first.done ? '' : first.value);
  return sql.begin(async (tx) => {
    const migrations = await migrationsOf(tx);
    if (migrations.join() !== header.migrations.join())
      throw new BackupError(
        `the backup was written under migrations ${header.migrations.at(-1) ?? '(none)'} and this database is at ${migrations.at(-1) ?? '(none)'}: restore it with the service version that wrote it`,
      );
    await tx`SET LOCAL session_replication_role = replica`.catch((err: Error) => {
      throw new BackupError(
        `${err.message}: a restore turns foreign keys and triggers off while it loads, which needs a superuser or GRANT SET ON PARAMETER session_replication_role`,
      );
    });
    const tables = await tablesOf(tx);
    if (tables.length === 0) throw new BackupError("this database has none of the service's tables: start the service on it once first");
    await tx.unsafe(`TRUNCATE ${tables.map(ident).join(', ')}`);
    const columns = await tx<{ table: string; list: string }[]>`
      SELECT c.relname AS table, string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) AS list
      FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relname IN ${tx(tables)} GROUP BY c.relname`;
    const columnsOf = new Map(columns.map((c) => [c.table, c.list]));
    let summary: BackupSummary = { tables: 0, rows: 0 };
    for await (const line of lines) {
      if (line.startsWith('{"table":')) {
        const table = (JSON.parse(line.slice(0, line.indexOf(',"rows":')) + '}') as { table: string }).table;
        const list = columnsOf.get(table);
        if (list === undefined) throw new BackupError(`the backup has a table "${table}" this database does not`);
        summary = { ...summary, tables: summary.tables + 1 };
        if (line.endsWith(',"rows":[]}')) continue;
        const [done] = await tx.unsafe<{ count: number }[]>(
          `WITH put AS (INSERT INTO ${ident(table)} (${list}) OVERRIDING SYSTEM VALUE
             SELECT ${list} FROM json_populate_recordset(null::${ident(table)}, ($1::text::json)->'rows') RETURNING 1)
           SELECT count(*)::int AS count FROM put`,
          [line],
        );
        summary = { ...summary, rows: summary.rows + done!.count };
      } else if (line.startsWith('{"sequences":')) {
        // Only forward: a sequence moves to the backup's value when that is ahead of its own.
        await tx.unsafe(
          `SELECT setval(quote_ident(s.key)::regclass, s.value::bigint) FROM json_each_text(($1::text::json)->'sequences') s
           WHERE s.value::bigint > coalesce(pg_sequence_last_value(quote_ident(s.key)::regclass), 0)`,
          [line],
        );
      }
    }
    for (const [table, sequence] of Object.entries(VERSIONS))
      if (tables.includes(table)) await tx.unsafe(`UPDATE ${ident(table)} SET version = nextval('${ident(sequence)}')`);
    await tx`SELECT pg_notify(${RESTORED_CHANNEL}, ${header.createdAt})`;
    return summary;
  });
}

function parseHeader(line: string): Header {
  let header: Partial<Header>;
  try {
    header = JSON.parse(line) as Partial<Header>;
  } catch {
    throw new BackupError(`not a backup of this service (no ${BACKUP_FORMAT} header)`);
  }
  if (header.format !== BACKUP_FORMAT || !Array.isArray(header.migrations))
    throw new BackupError(`not a backup of this service (no ${BACKUP_FORMAT} header)`);
  if (header.version !== FORMAT_VERSION)
    throw new BackupError(`backup format version ${String(header.version)}; this service reads version ${FORMAT_VERSION}`);
  return header as Header;
}
