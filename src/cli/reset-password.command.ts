import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { openEmbedded, openPostgres, type Database } from '../db/database.js';
import { waitForDatabase } from '../db/startup.js';
import { hashPassword, randomPassword } from '../auth/password.js';
import { clearLoginFailures, revokeUserSessions } from '../auth/auth.sql.js';
import { PLATFORM_TENANT } from '../identity/roles.js';
import { transaction } from '../db/retry.js';

/**
 * docs/operations.md#password-reset: resets a lost password. `dept-tenant reset-password`
 * (or `npm run reset-password`) resets the platform `admin`; `--tenant 100001 --user alice`
 * any tenant's user. The
 * new password comes from NEW_PASSWORD, or is generated and printed. In the
 * same transaction the user's sessions are revoked and its login lockout is
 * cleared. It uses the service's configuration (DATABASE_URL or DATA_DIR);
 * on the embedded database it needs the data directory to itself, so it
 * refuses while the service runs there.
 */
export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { tenant: { type: 'string', default: PLATFORM_TENANT }, user: { type: 'string', default: 'admin' } },
  });
  const tenantId = values.tenant;
  const userName = values.user;
  const config = loadConfig();
  const given = process.env.NEW_PASSWORD;
  if (given !== undefined && given.length < 8) throw new ConfigError('NEW_PASSWORD must be at least 8 characters');
  const password = given ?? randomPassword();

  // Opening a missing DATA_DIR would create an empty database there.
  if (!config.databaseUrl && !existsSync(config.dataDir))
    throw new ConfigError(`DATA_DIR ${config.dataDir} does not exist; set DATA_DIR or DATABASE_URL as for the service`);
  const db: Database = config.databaseUrl
    ? openPostgres(config.databaseUrl, { prepare: config.dbPrepare, directUrl: config.databaseDirectUrl })
    : await openEmbedded(config.dataDir);
  try {
    await waitForDatabase(db, config.dbStartTimeout, () => {});
    const passwordHash = await hashPassword(password);
    const found = await transaction(db.sql, async (tx) => {
      const [user] = await tx<{ userId: number }[]>`
        UPDATE sys_user SET password_hash = ${passwordHash}, update_by = 'reset-password', update_time = now()
        WHERE tenant_id = ${tenantId} AND user_name = ${userName} AND del_flag = '0'
        RETURNING user_id AS "userId"`;
      if (!user) return false;
      await revokeUserSessions(tx, tenantId, user.userId);
      await clearLoginFailures(tx, tenantId, userName);
      return true;
    });
    if (!found) {
      console.error(`No live user "${userName}" in tenant ${tenantId}; nothing changed`);
      return 1;
    }
    console.log(`Password of "${userName}" in tenant ${tenantId} reset; its sessions are revoked and its login lockout cleared.`);
    if (given === undefined) console.log(`New password: ${password}`);
    return 0;
  } finally {
    await db.close();
  }
}
