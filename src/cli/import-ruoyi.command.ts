import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { openEmbedded, openPostgres, type Database } from '../db/database.js';
import { waitForDatabase } from '../db/startup.js';
import { migrate } from '../db/migrate.js';
import { distributeSchema, isCitus, setCitus } from '../db/citus.js';
import { bootstrap } from '../bootstrap.js';
import { dialectOf } from '../ruoyi/ruoyi.source.js';
import { importRuoyi } from '../ruoyi/ruoyi.import.js';
import { progressFor } from '../ruoyi/ruoyi.progress.js';
import { problemLines, summaryLines } from '../ruoyi/ruoyi.report.js';

const USAGE = 'Usage: dept-tenant import-ruoyi --from <mysql://… | postgres://…> [--dry-run]';

/**
 * docs/migrate-from-ruoyi.md: `dept-tenant import-ruoyi --from <url> [--dry-run]` brings
 * a RuoYi-Vue-Plus 5.x database's packages, tenants, departments and people
 * into the service's database, configured as the service is (DATABASE_URL,
 * else DATA_DIR, which must not be held by a running service). An empty
 * target is migrated and bootstrapped first, as the service's start would.
 * Exit codes: 0 done (or nothing to do), 1 problems found (nothing written),
 * 2 usage error.
 */
export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { from: { type: 'string' }, 'dry-run': { type: 'boolean', default: false } } });
  const url = values.from;
  if (url === undefined || dialectOf(url) === undefined) {
    console.error(`${url === undefined ? '--from is required' : `--from must be a mysql:// or postgres:// URL`}\n\n${USAGE}`);
    return 2;
  }
  const dryRun = values['dry-run'];
  const config = loadConfig();
  const db: Database = config.databaseUrl
    ? openPostgres(config.databaseUrl, { prepare: config.dbPrepare, directUrl: config.databaseDirectUrl })
    : await openEmbedded(config.dataDir);
  try {
    await waitForDatabase(db, config.dbStartTimeout, () => {});
    await migrate(db.direct);
    if (config.databaseUrl !== undefined && (await isCitus(db.direct))) {
      await distributeSchema(db.direct);
      setCitus(true);
    }
    const { generatedPassword } = await bootstrap(db.sql, config.adminPassword);
    const progress = progressFor(process.stderr, (line) => console.log(line));
    const report = await importRuoyi(db.sql, url, { dryRun, progress });
    if (report.plan.problems.length > 0) {
      for (const line of problemLines(report)) console.error(line);
      return 1;
    }
    for (const line of summaryLines(report, dryRun)) console.log(line);
    if (generatedPassword !== undefined && !report.plan.users.some((u) => u.row.tenant_id === '000000' && u.row.user_name === 'admin')) {
      console.log(`The platform admin was created with the password: ${generatedPassword}`);
    }
    return 0;
  } finally {
    await db.close();
  }
}
