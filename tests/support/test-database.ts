import { readFile } from 'node:fs/promises';
import { inject } from 'vitest';
import { openEmbedded, type Database, type Sql } from '../../src/db/database.js';
import type { Deadline } from '../../src/db/deadline.js';
import type { ExchangeObserver } from '../../src/db/exchange.observer.js';
import { openFreshPostgres } from './fresh-postgres.js';
import { setCitus } from '../../src/db/citus.js';
import { recordedPool } from './statement-log.js';

export interface TestDatabase extends Database {
  kind: string;
  /**
   * The pool the app under test uses: on PostgreSQL a pool of its own whose
   * statements the run records and checks (tests/support/statement-log.ts);
   * on PGlite, with its one connection, the same pool as `sql`. `appDirect`
   * is that pool's direct connection (LISTEN).
   */
  appSql: Sql;
  appDirect: Sql;
  /** The client-side statement deadline of `appSql` (src/db/deadline.ts), for a test that must not be cut by a loaded machine. */
  appDeadline: Deadline;
  /** The exchange counters of `appSql`'s Database, for the app's db_* metrics (buildApp's `exchanges`). */
  appExchanges: ExchangeObserver;
  /**
   * PostgreSQL: another pool and direct connection of their own on the same
   * database, as a second process of the service would have (through the
   * pooler too, under TEST_POOLER_URL), recorded like `appSql`. Undefined on
   * PGlite, which has one connection for one process.
   */
  connectAgain?: (poolSize: number) => Database;
}

/**
 * A database of its own for one test file: a new database on the chosen
 * PostgreSQL server (dropped afterwards), or a new in-memory PGlite.
 * By default it starts as a copy of the run's template (global-setup.ts):
 * migrated, and bootstrapped with ADMIN_PASSWORD (tests/support/constants.ts).
 * `empty: true` gives a database nothing has touched, for tests of the
 * migrations, the bootstrap or a first start. Under TEST_POOLER_URL the pools
 * go through the pooler and `direct` to the server (docs/testing.md#through-pgbouncer).
 */
/** The Citus pass's nodes (TEST_CITUS_URL), coordinator first; undefined on any other database. */
export function citusNodesOfRun(): string[] | undefined {
  const nodes = inject('citusNodes');
  return nodes ? (JSON.parse(nodes) as string[]) : undefined;
}

export async function openTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const serverUrl = inject('databaseUrl');
  const kind = inject('databaseKind');
  if (!serverUrl) {
    const tarball = options.empty ? undefined : inject('templateTarball');
    const loadDataDir = tarball ? new Blob([await readFile(tarball)]) : undefined;
    const db = await openEmbedded(undefined, { loadDataDir });
    return { ...db, appSql: db.sql, appDirect: db.direct, appDeadline: db.deadline, appExchanges: db.exchanges, kind };
  }
  const template = options.empty ? undefined : inject('templateDatabase');
  const recorded = recordedPool();
  const nodes = citusNodesOfRun();
  // The code under test knows it is on Citus as the service does after its start (src/main.ts).
  setCitus(nodes !== undefined);
  const db = await openFreshPostgres(serverUrl, 'test', 20, template || undefined, inject('poolerUrl') || undefined, recorded, nodes);
  return { ...db, connectAgain: (poolSize) => db.connectAgain(poolSize, recorded), kind };
}
