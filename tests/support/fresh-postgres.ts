import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { openPostgres, type Database, type PostgresOptions, type Sql } from '../../src/db/database.js';
import type { Deadline } from '../../src/db/deadline.js';
import type { ExchangeObserver } from '../../src/db/exchange.observer.js';
import { createCitusDatabase, dropCitusDatabase } from './citus-cluster.js';

/** How an app reaches one database: the options openPostgres (and a spawned service's environment) takes. */
export interface DatabaseRoute {
  /** DATABASE_URL: the server, or the pooler in front of it. */
  url: string;
  /** DATABASE_DIRECT_URL: the server itself, for LISTEN and migrations; unset when `url` is the server. */
  directUrl?: string;
  /** DB_PREPARE: false through a transaction pooler (docs/operations.md#behind-a-pooler). */
  prepare: boolean;
  /** On a Citus coordinator: the pools refuse multi-shard statements, as the service's own do there (src/db/citus.ts). */
  citus?: boolean;
}

/**
 * The route to database `name` on the server at `serverUrl`: straight to it, or,
 * with `poolerUrl` (a PgBouncer in transaction mode in front of that server,
 * TEST_POOLER_URL), through the pooler under the same database name, as a
 * deployment behind one is configured.
 */
export function databaseRoute(serverUrl: string, name: string, poolerUrl?: string): DatabaseRoute {
  const on = (base: string) => {
    const url = new URL(base);
    url.pathname = `/${name}`;
    return url.toString();
  };
  return poolerUrl ? { url: on(poolerUrl), directUrl: on(serverUrl), prepare: poolerPrepare() } : { url: on(serverUrl), prepare: true };
}

/**
 * DB_PREPARE through the pooler: false (PgBouncer 1.18 cannot keep named
 * statements), or true with TEST_POOLER_PREPARE=true, for a PgBouncer 1.21 or
 * later with max_prepared_statements set.
 */
export function poolerPrepare(): boolean {
  return process.env.TEST_POOLER_PREPARE === 'true';
}

/** A Database whose connections can be opened once more, as a second process on the same database would. */
export interface FreshPostgres extends Database {
  route: DatabaseRoute;
  /** Another pool (and direct connection) of its own on the same database, closed by its own close(); `extra` may record its statements. */
  connectAgain(poolSize: number, extra?: Pick<PostgresOptions, 'onStatement'>): Database;
}

/**
 * A new database on the server at `serverUrl`, dropped again by close(). Used by the tests and the benchmark.
 * With `template`, the new database is a copy of that one (CREATE DATABASE ... TEMPLATE), which must have
 * no other session connected while it is copied. With `poolerUrl`, the pools go through that pooler
 * (databaseRoute); creating, copying and dropping always talk to the server itself.
 * `appSql` (and `appDirect`) are a second pool on the same database for the app under test, opened with
 * `appPool`'s options (the tests record its statements, tests/support/statement-log.ts); `sql` stays the tests' own.
 */
export async function openFreshPostgres(
  serverUrl: string,
  prefix: string,
  poolSize: number,
  template?: string,
  poolerUrl?: string,
  appPool: Pick<PostgresOptions, 'onStatement'> = {},
  citusNodes?: string[],
): Promise<FreshPostgres & { appSql: Sql; appDirect: Sql; appDeadline: Deadline; appExchanges: ExchangeObserver }> {
  // The names are ours (prefix + hex, and the template named by the global setup), never input, so they are safe in the statement text.
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  if (citusNodes) await createCitusDatabase(citusNodes, name, template);
  else await admin.unsafe(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  const route = { ...databaseRoute(serverUrl, name, poolerUrl), ...(citusNodes ? { citus: true } : {}) };
  const connectAgain = (max: number, extra: Pick<PostgresOptions, 'onStatement' | 'citus'> = {}) =>
    openPostgres(route.url, { max, prepare: route.prepare, directUrl: route.directUrl, citus: route.citus, ...extra });
  // The tests' own pool reads across tenants freely (their checks); the app's runs as the service's would.
  const db = connectAgain(poolSize, { citus: false });
  // Connections open on first use, so a pool a caller never uses costs nothing.
  const app = connectAgain(poolSize, appPool);
  return {
    ...db,
    appSql: app.sql,
    appDirect: app.direct,
    appDeadline: app.deadline,
    appExchanges: app.exchanges,
    route,
    connectAgain,
    async close() {
      await Promise.all([app.close(), db.close()]);
      // FORCE also ends the pooler's server connections to it.
      if (citusNodes) await dropCitusDatabase(citusNodes, name);
      else await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
