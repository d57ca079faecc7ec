import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { openEmbedded, openPostgres } from '../db/database.js';
import { waitForDatabase } from '../db/startup.js';
import { migrate } from '../db/migrate.js';

/**
 * docs/operations.md#commands: applies the migrations in sql/ that the
 * database lacks, as the service does at start, without starting it: ahead
 * of a rollout, or to give an image an embedded database whose schema is
 * ready (the Dockerfile does, so a container's first start skips initdb and
 * the migrations). Only the schema: the first admin and the token secret are
 * made by the service's first start, never here.
 */
export async function run(args: string[]): Promise<number> {
  parseArgs({ args, options: {} });
  const config = loadConfig();
  const db = config.databaseUrl
    ? openPostgres(config.databaseUrl, { prepare: config.dbPrepare, directUrl: config.databaseDirectUrl, max: 1 })
    : await openEmbedded(config.dataDir);
  try {
    await waitForDatabase(db, config.dbStartTimeout, () => {});
    // Migrations may legitimately run long (an index on a big table).
    db.deadline.ms = 0;
    const applied = await migrate(db.direct);
    console.log(
      applied.length > 0 ? `Applied ${applied.join(', ')} to ${db.directDescription}` : `${db.directDescription} has every migration already`,
    );
    return 0;
  } finally {
    await db.close();
  }
}
