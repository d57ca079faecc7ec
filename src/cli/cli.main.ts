#!/usr/bin/env node
import { ConfigError } from '../config.js';
import { DataDirBusyError } from '../db/data-dir.lock.js';

/**
 * `dept-tenant <command> [options]`: the package's bin (also in the image), for
 * what an operator runs beside the service (docs/operations.md#commands). Each
 * command is a module of its own under src/cli/ exporting `run(args)`, loaded
 * only when named, so one command's dependencies never load for another.
 * Exit codes: 0 done, 1 failed, 2 usage error, 73 the embedded database's
 * DATA_DIR is held by a running service.
 */
interface Command {
  summary: string;
  load: () => Promise<{ run(args: string[]): Promise<number> }>;
}

const COMMANDS: Record<string, Command> = {
  backup: {
    summary: "write all of the service's data to FILE (a running embedded service is asked to)",
    load: () => import('./backup.command.js'),
  },
  restore: {
    summary: "replace all of the service's data with the backup in FILE, in one transaction",
    load: () => import('./restore.command.js'),
  },
  migrate: {
    summary: 'apply the migrations the database lacks, without starting the service',
    load: () => import('./migrate.command.js'),
  },
  'reset-password': {
    summary: 'reset a lost password: [--tenant 000000] [--user admin], NEW_PASSWORD or a generated one',
    load: () => import('./reset-password.command.js'),
  },
  'import-ruoyi': {
    summary: 'bring in a RuoYi-Vue-Plus 5.x database: --from <mysql://… | postgres://…> [--dry-run]',
    load: () => import('./import-ruoyi.command.js'),
  },
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return ['Usage: dept-tenant <command> [options]', '', 'Commands:', ...lines].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`Unknown command "${name}".\n\n${usage()}`);
    return 2;
  }
  try {
    return await (await command.load()).run(args);
  } catch (err) {
    if (err instanceof DataDirBusyError) {
      console.error(`${err.message}. Stop the service first, then run this again.`);
      return 73;
    }
    // parseArgs' own refusals (an unknown option, a missing value) are usage errors.
    if (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS')) {
      console.error(`${err.message}\n\n${usage()}`);
      return 2;
    }
    console.error(`${name} failed:`, err instanceof ConfigError || err instanceof Error ? err.message : err);
    return 1;
  }
}

void main(process.argv.slice(2)).then((code) => process.exit(code));
