import { ConfigError, loadConfig, loadEnvFile, type Config } from './config.js';
import { openEmbedded, openPostgres, type Database } from './db/database.js';
import { migrate } from './db/migrate.js';
import { bootstrap } from './bootstrap.js';
import { buildApp } from './app.js';

async function openDatabase(config: Config): Promise<Database> {
  return config.databaseUrl ? openPostgres(config.databaseUrl) : openEmbedded(config.dataDir);
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

  const db = await openDatabase(config);
  const applied = await migrate(db.sql);
  const { generatedPassword } = await bootstrap(db.sql, config.adminPassword);
  if (generatedPassword) {
    // Printed once, on first start only, as a plain line of its own between the
    // JSON log lines (never a log record, which log shippers would keep);
    // set ADMIN_PASSWORD to choose it instead.
    process.stdout.write(`\nGenerated password of user "admin" in tenant 000000 (shown once): ${generatedPassword}\n\n`);
  }

  const app = await buildApp({ sql: db.sql, config });
  app.log.info({ database: db.description, migrations: applied }, 'database ready');
  await app.listen({ port: config.port, host: config.host });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: no new connections, finishing in-flight requests');
    try {
      await app.close();
      await db.close();
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  console.error('Failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
