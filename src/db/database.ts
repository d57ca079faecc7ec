import postgres from 'postgres';
import { mkdir } from 'node:fs/promises';
import { lockDataDir } from './data-dir.lock.js';
import type { Deadline } from './deadline.js';
import { ExchangeObserver } from './exchange.observer.js';
import { watchedSocket } from './socket.factory.js';
import { APPLICATION_NAME, driverUrl, parseDatabaseUrl, targetSessionAttrs } from './url.js';
import { ROUTER_ONLY } from './citus.js';

// int8 columns (ids, counts) come back as JS numbers up to 2^53-1 and as
// decimal strings above: a department or user id brought in from RuoYi may be
// a snowflake beyond it, which the API carries as a string
// (docs/api-rules.md#ids, core/ids.ts). Fifteen digits are always below it.
// The tenant's 19-digit snowflake id is read as text by its queries.
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);
const types = {
  bigint: {
    to: 20,
    from: [20],
    serialize: (value: number | bigint | string) => String(value),
    parse: (value: string) => (value.length <= 15 || BigInt(value) <= SAFE_MAX ? Number(value) : value),
  },
};

type Types = { bigint: number };
/** The pool: runs queries and opens transactions. */
export type Sql = postgres.Sql<Types>;
/** Inside a transaction: write functions take this, so they cannot run outside one. */
export type Tx = postgres.TransactionSql<Types>;
/** Either of the two: read functions do not care which. */
export type Db = postgres.ISql<Types>;

export interface Database {
  /** The pool every request uses: through a pooler when DATABASE_URL names one. */
  sql: Sql;
  /**
   * Session work that a transaction pooler cannot carry: LISTEN and the
   * migrations. The DATABASE_DIRECT_URL client when it is set, else `sql`.
   */
  direct: Sql;
  /** Where the data lives, for the start-up log (never includes a password). */
  description: string;
  /** The same for `direct` (equal to description when direct is sql). */
  directDescription: string;
  /** The client-side statement deadline (0: none); start-up lifts it while migrations run. */
  deadline: Deadline;
  /** What the socket watcher counts of both pools' connections, for the metrics (buildApp's `exchanges`). */
  exchanges: ExchangeObserver;
  close(): Promise<void>;
}

/**
 * Bounded waits on PostgreSQL (docs/operations.md). A silent statement is cut
 * after STATEMENT_DEADLINE_MS and a connection attempt after CONNECT_TIMEOUT_S,
 * so with the request deadline (src/http/lifecycle.ts) a frozen database turns
 * requests into 503 within 10 s. Reconnect back-off is capped at 2 s so the
 * pool comes back soon after the database does.
 */
const STATEMENT_DEADLINE_MS = 5_000;
const CONNECT_TIMEOUT_S = 5;

function connect(url: string | undefined, options: postgres.Options<typeof types>): Sql {
  const merged = { ...options, types, onnotice: () => {} };
  return (url === undefined ? postgres(merged) : postgres(url, merged)) as unknown as Sql;
}

export interface PostgresOptions {
  /** Pool size (10). */
  max?: number;
  /** Named prepared statements (DB_PREPARE, default true); a transaction pooler that cannot keep them (PgBouncer before 1.21) needs false. */
  prepare?: boolean;
  /** DATABASE_DIRECT_URL: the server itself or a session pool, for LISTEN and the migrations. */
  directUrl?: string;
  /**
   * On a Citus coordinator (src/db/citus.ts): every connection starts with
   * citus.multi_task_query_log_level = error, so a statement that would run
   * on several shards fails unless it lowers the level for itself.
   */
  citus?: boolean;
  /** Called with every statement's text and parameters before it is sent (postgres.js `debug`); the tests record them. */
  onStatement?: (text: string, parameters: readonly unknown[]) => void;
}

export function openPostgres(url: string, options: PostgresOptions = {}): Database {
  const deadline = { ms: STATEMENT_DEADLINE_MS };
  const describe = (clientUrl: string) => {
    const target = parseDatabaseUrl(clientUrl);
    return `PostgreSQL at ${target.hosts.map(({ host, port }) => `${host}:${port}`).join(',')}/${target.database}`;
  };
  // One observer for both pools: the metrics count every connection of this Database (docs/operations.md#metrics).
  const observer = new ExchangeObserver();
  const client = (clientUrl: string, max: number, prepare: boolean) =>
    connect(driverUrl(clientUrl), {
      max,
      prepare,
      connect_timeout: CONNECT_TIMEOUT_S,
      // Idle connections are closed after a minute, so few survive an outage to fail on their next use.
      idle_timeout: 60,
      keep_alive: 15,
      backoff: (retries: number) => Math.min(0.1 * 2 ** retries, 2),
      // postgres.js supports a socket factory but does not declare it in its types.
      ...({ socket: watchedSocket(deadline, parseDatabaseUrl(clientUrl).hosts, observer) } as object),
      ...targetSessionAttrs(parseDatabaseUrl(clientUrl)),
      ...(options.onStatement ? { debug: (_connection: number, text: string, parameters: unknown[]) => options.onStatement!(text, parameters) } : {}),
      // Only what every pooler accepts (PgBouncer refuses any other startup
      // parameter): the session settings we rely on are set per transaction
      // instead (applySettings in src/db/retry.ts). On Citus, the one setting that
      // must hold for every statement, in or out of a transaction, is sent here.
      connection: { application_name: APPLICATION_NAME, ...(options.citus ? ROUTER_ONLY : {}) },
    });
  const sql = client(url, options.max ?? 10, options.prepare ?? true);
  // LISTEN holds one connection of its own; the migrations run one at a time.
  const direct = options.directUrl ? client(options.directUrl, 2, true) : sql;
  return {
    sql,
    direct,
    deadline,
    exchanges: observer,
    description: describe(url),
    directDescription: describe(options.directUrl ?? url),
    async close() {
      await Promise.all([sql.end({ timeout: 5 }), direct === sql ? undefined : direct.end({ timeout: 5 })]);
    },
  };
}

/**
 * The embedded database: PGlite in `dataDir` (or in memory when dataDir is
 * undefined), served over the PostgreSQL wire protocol on a private loopback
 * port so the same postgres.js code runs in both modes. One connection only:
 * the socket server multiplexes connections onto one backend and would mix
 * their transactions. A data directory has one owner process (data-dir.lock.ts);
 * opening one that another process holds throws DataDirBusyError.
 */
export interface EmbeddedOptions {
  /** A data directory tarball (from dumpDataDir) to start from instead of an empty database; tests use it for a prepared template. */
  loadDataDir?: Blob;
}

export async function openEmbedded(dataDir: string | undefined, options: EmbeddedOptions = {}): Promise<Database & { dumpDataDir(): Promise<Blob> }> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  if (dataDir !== undefined) await mkdir(dataDir, { recursive: true });
  const lock = dataDir === undefined ? undefined : await lockDataDir(dataDir);
  // PostgreSQL zeroes its shared buffers at start, and the WASM heap they live
  // in never shrinks: PGlite's default 128 MB would be resident from the first
  // second. 16 MB holds the hot pages (the chart cache spares the big scans);
  // the rest is read through the file system's page cache.
  const db = await PGlite.create(dataDir, {
    startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'],
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
  }).catch(async (err: unknown) => {
    await lock?.release();
    throw err;
  });
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 1 });
  await server.start();
  const [host, port] = server.getServerConn().split(':');
  // Watched like a server's connections, without a deadline (it cannot fall
  // silent while this process runs), so the metrics see its queries too.
  const observer = new ExchangeObserver();
  const deadline = { ms: 0 };
  // The one connection is kept for the life of the process: postgres.js would
  // otherwise recycle it every 30-60 minutes, and the socket server admits the
  // replacement only once the old connection has gone.
  const sql = connect(undefined, {
    host,
    port: Number(port),
    user: 'postgres',
    database: 'postgres',
    max: 1,
    max_lifetime: null,
    ...({ socket: watchedSocket(deadline, [{ host: host!, port: Number(port) }], observer) } as object),
  });
  const description = dataDir === undefined ? 'embedded PGlite (in memory)' : `embedded PGlite in ${dataDir}`;
  return {
    sql,
    direct: sql,
    deadline,
    exchanges: observer,
    description,
    directDescription: description,
    /** The data directory as an uncompressed tarball, for loadDataDir. */
    dumpDataDir: () => db.dumpDataDir('none'),
    async close() {
      await sql.end({ timeout: 5 });
      await server.stop();
      await db.close();
      await lock?.release();
    },
  };
}
