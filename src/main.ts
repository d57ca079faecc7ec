import { setFlagsFromString } from 'node:v8';
import { ConfigError, loadConfig, loadEnvFile, type Config } from './config.js';
import { openEmbedded, openPostgres, type Database } from './db/database.js';
import { DataDirBusyError } from './db/data-dir.lock.js';
import { waitForDatabase } from './db/startup.js';
import { migrate, MigrationError } from './db/migrate.js';
import { distributeSchema, isCitus, setCitus } from './db/citus.js';
import { adminPasswordMatches, bootstrap } from './bootstrap.js';
import { buildApp } from './app.js';
import type { FastifyBaseLogger } from 'fastify';
import { listenManagement } from './metrics/management.server.js';
import { parseDatabaseUrl } from './db/url.js';
import type { Tracing } from './traces/traces.sdk.js';
import { settledWithin, TIMED_OUT, within } from './core/timeout.js';
import { listenControl } from './db/control.socket.js';
import { backup, restore } from './db/backup.js';

/** docs/operations.md#traces: the SDK is imported only when tracing is on. */
async function loadTracing(config: Config): Promise<Tracing | undefined> {
  if (!config.traces) return undefined;
  return (await import('./traces/traces.sdk.js')).startTracing(config.traces);
}

/** What the statement spans say of the database: its name, and the server when there is one host. */
function sqlTarget(config: Config) {
  if (!config.databaseUrl) return { database: 'postgres' };
  const { database, hosts } = parseDatabaseUrl(config.databaseUrl);
  return hosts.length === 1 ? { database, server: { address: hosts[0]!.host, port: hosts[0]!.port } } : { database };
}

async function openDatabase(config: Config, citus = false): Promise<Database> {
  if (config.databaseUrl) return openPostgres(config.databaseUrl, { prepare: config.dbPrepare, directUrl: config.databaseDirectUrl, citus });
  keepMemorySmall();
  return openEmbedded(config.dataDir);
}

/**
 * The embedded database lives in this process: PGlite's WASM memory (128 MiB
 * reserved, the pages it touched resident and never returned), its compiled
 * code, and its per-query JavaScript garbage come on top of the service's own.
 * - Under load V8 let the JavaScript heap grow to about three times its live
 *   size before collecting it; a growing factor of 1.3 keeps the process's
 *   resident memory within its goal for a little of the by-id read's
 *   throughput (docs/benchmark.md#memory-of-the-embedded-mode). V8 reads the
 *   factor at each collection, so it can be set here, after start.
 * - PGlite's module is compiled, and its hot functions compiled again, on
 *   V8's background threads; each thread that compiles mallocs into a glibc
 *   arena of its own, which keeps its high-water mark. One compilation task
 *   (set before PGlite is imported) keeps that to one arena, less resident
 *   memory for a slower warm-up only: the code it ends with is the same.
 * A flag given to node (its command line or NODE_OPTIONS) is left alone.
 */
function keepMemorySmall(): void {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  for (const flag of ['--heap-growing-percent=30', '--wasm-num-compilation-tasks=1']) {
    const name = flag.slice(0, flag.indexOf('='));
    if (!given.some((arg) => arg.startsWith(name))) setFlagsFromString(flag);
  }
}

async function main(): Promise<void> {
  let config: Config;
  try {
    loadEnvFile();
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`Configuration error: ${err.message}`);
      process.exit(78);
    }
    throw err;
  }

  const tracing = await loadTracing(config);
  let db = await openDatabase(config);
  await waitForDatabase(db, config.dbStartTimeout, ({ where, refused, reason }, retryInMs) =>
    console.error(`${where} ${refused ? 'refused the connection' : 'not answering'} (${reason}); retrying in ${(retryInMs / 1000).toFixed(1)} s`),
  );
  // Migrations may legitimately run long (an index on a big table, another node's turn first).
  const statementDeadline = db.deadline.ms;
  db.deadline.ms = 0;
  const applied = await migrate(db.direct);
  // On a Citus coordinator (docs/scale-out.md): the tables not yet placed are placed, and the pools open again
  // with every connection refusing a statement that would run on several shards.
  const citus = config.databaseUrl !== undefined && (await isCitus(db.direct));
  const placed = citus ? await distributeSchema(db.direct) : [];
  db.deadline.ms = statementDeadline;
  if (citus) {
    await db.close();
    db = await openDatabase(config, true);
    setCitus(true);
  }
  const { generatedPassword } = await bootstrap(db.sql, config.adminPassword);
  if (generatedPassword) {
    // Printed once, on first start only, as a plain line of its own between the
    // JSON log lines (never a log record, which log shippers would keep);
    // set ADMIN_PASSWORD to choose it instead.
    process.stdout.write(`\nGenerated password of user "admin" in tenant 000000 (shown once): ${generatedPassword}\n\n`);
  }

  const app = await buildApp({
    sql: db.sql,
    directSql: db.direct,
    exchanges: db.exchanges,
    config,
    tracing: tracing?.plugin(db.sql, sqlTarget(config)),
  });
  app.log.info({ database: db.description, migrations: applied, ...(citus ? { citus: { placed } } : {}) }, 'database ready');
  // Before the API's port: a management port that is taken stops the start with nothing listening.
  const management = config.managementPort ? await listenManagement(app, { port: config.managementPort, host: config.managementHost }) : undefined;
  // The embedded database's door for `dept-tenant backup` / `restore` while the service holds DATA_DIR; open before the
  // API's port, so a service that answers also takes the commands.
  const control = config.databaseUrl
    ? undefined
    : await listenControl(config.dataDir, async (command, file) => {
        if (command === 'backup') return backup(db.sql, file);
        const summary = await restore(db.sql, file);
        app.dataReplaced();
        return summary;
      });
  await app.listen({ port: config.port, host: config.host });

  // docs/operations.md: stop accepting, let in-flight requests finish for up to
  // SHUTDOWN_TIMEOUT seconds, then exit: 0 when everything finished, 1 when
  // requests had to be cut off.
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal, timeoutSeconds: config.shutdownTimeout }, 'shutting down: no new connections, finishing in-flight requests');
    // Out now, not with the batch at exit (app.ts gathers log lines): a supervisor reading the log sees the shutdown
    // begin, and the line cannot be lost with a last write that races the process's end.
    void flushLog(app.log, 1_000);
    try {
      const outcome = (await within(config.shutdownTimeout * 1000, app.close())) === TIMED_OUT ? 'cut off' : 'clean';
      await management?.close();
      control?.close();
      if (outcome === 'cut off') {
        app.log.error({ timeoutSeconds: config.shutdownTimeout }, 'shutdown: requests still running after SHUTDOWN_TIMEOUT were cut off');
        app.server.closeAllConnections();
      }
      // Bounded, and the timer keeps the event loop alive: the embedded database's
      // close can leave nothing pending, and Node would then exit on its own with
      // whatever exit code PGlite set (0) instead of ours.
      await within(10_000, db.close());
      // The spans still buffered, including those of the requests that just finished.
      await tracing?.shutdown(5_000);
      app.log.info({ outcome }, 'stopped');
      await flushLog(app.log, 1_000);
      process.exit(outcome === 'clean' ? 0 : 1);
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  // After listening, so the check (one scrypt) does not delay readiness.
  const matches = config.adminPassword && !generatedPassword ? await adminPasswordMatches(db.sql, config.adminPassword).catch(() => true) : true;
  if (!matches) {
    app.log.warn(
      'ADMIN_PASSWORD does not match the existing platform admin: it only seeds an empty database and is ignored here. ' +
        'To reset the password, run `npm run reset-password` (see docs/operations.md#password-reset).',
    );
  }
}

/**
 * Writes the log lines gathered so far (pino's flush; a logger without one has nothing gathered); resolves when
 * they are out, or after `ms` if stdout does not drain.
 */
function flushLog(log: FastifyBaseLogger, ms: number): Promise<void> {
  const { flush } = log as { flush?: (cb: () => void) => void };
  return settledWithin(ms, typeof flush === 'function' ? new Promise<void>((resolve) => flush.call(log, () => resolve())) : undefined);
}

main().catch((err) => {
  if (err instanceof DataDirBusyError) {
    console.error(`Refusing to start: ${err.message}`);
    process.exit(73);
  }
  if (err instanceof MigrationError) {
    // The database and the files in sql/ disagree: retrying will not help.
    console.error(`Refusing to start: ${err.message}`);
    process.exit(65);
  }
  console.error('Failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
