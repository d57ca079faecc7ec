import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { askService, type ControlCommand } from '../db/control.socket.js';

/**
 * `dept-tenant backup FILE` and `dept-tenant restore FILE`
 * (docs/operations.md#backup-and-restore), on the service's configuration
 * (DATABASE_URL, else DATA_DIR). On the embedded database a running service
 * holds DATA_DIR, so the command asks it through its control socket and the
 * service does the work on its own connection (a restore also drops its
 * caches); with no service running, the command opens DATA_DIR itself. On
 * PostgreSQL the command connects itself; the service's nodes hear of a
 * restore by NOTIFY.
 */
export async function runDataCommand(command: ControlCommand, args: string[]): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1) {
    console.error(`Usage: dept-tenant ${command} FILE`);
    return 2;
  }
  const file = resolve(positionals[0]!);
  if (command === 'restore' && !existsSync(file)) throw new ConfigError(`${file} does not exist`);
  const config = loadConfig();
  const started = performance.now();
  const done = (how: string, summary: { tables: number; rows: number }) => {
    const ms = Math.round(performance.now() - started);
    console.log(
      `${command === 'backup' ? 'Backed up' : 'Restored'} ${summary.rows} rows of ${summary.tables} tables ${command === 'backup' ? 'to' : 'from'} ${file} (${how}, ${ms} ms)`,
    );
    return 0;
  };
  if (!config.databaseUrl) {
    if (!existsSync(config.dataDir))
      throw new ConfigError(`DATA_DIR ${config.dataDir} does not exist; set DATA_DIR or DATABASE_URL as for the service`);
    const answer = await askService(config.dataDir, command, file);
    if (answer && !answer.ok) throw new Error(answer.error);
    if (answer) return done('by the running service', answer);
  }
  // Loaded only here: asking a running service needs none of the database code.
  const { openEmbedded, openPostgres } = await import('../db/database.js');
  const { backup, restore } = await import('../db/backup.js');
  const db = config.databaseUrl
    ? openPostgres(config.databaseUrl, { prepare: config.dbPrepare, directUrl: config.databaseDirectUrl, max: 1 })
    : await openEmbedded(config.dataDir);
  try {
    // No statement deadline: a big table takes the time it takes.
    db.deadline.ms = 0;
    const summary = await (command === 'backup' ? backup(db.direct, file) : restore(db.direct, file));
    return done(config.databaseUrl ? db.directDescription : 'the service not running', summary);
  } finally {
    await db.close();
  }
}
