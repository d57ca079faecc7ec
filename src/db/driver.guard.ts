import { inspect } from 'node:util';

/**
 * postgres.js 3.4.9 (porsager/postgres#1154, fix proposed in #1168) buffers a
 * small write and sends it from a setImmediate callback. A write made to a
 * connection whose socket has just closed (a failover, a pooler dropping
 * server connections, the pool ending at shutdown) is flushed to a null
 * socket: the callback throws outside any promise, which ends the whole
 * process. The usual such write, the ROLLBACK postgres.js sends for a
 * transaction whose statement the close failed, is no longer sent
 * (transaction() in src/db/retry.ts); this guard is for any other. By then
 * the connection's queries have already been failed with CONNECTION_CLOSED
 * (and answered 503 or retried), so the buffered bytes are moot: the guard
 * recognises exactly that error and keeps the process. It cannot repair the
 * driver's state: that connection keeps the unsent bytes, so for a while
 * its next start-up messages are held back too and its uses fail after the
 * connect timeout. Any other uncaught exception, and any unhandled rejection
 * but the one below, still ends the process as Node would (printed, exit
 * code 1).
 */
function isNullSocketWrite(error: unknown): boolean {
  return (
    error instanceof TypeError &&
    error.message.includes("reading 'write'") &&
    /\bnextWrite\b/.test(error.stack ?? '') &&
    /[\\/]postgres[\\/](?:cjs[\\/])?src[\\/]connection\.js/.test(error.stack ?? '')
  );
}

/**
 * postgres.js 3.4.9 runs statements of its own on a new connection before the
 * query that opened it: the array types it fetches (fetch_types, on by
 * default) and, for target_session_attrs on a server older than 14, the
 * session state. Nothing awaits them: when one fails, its promise is rejected
 * with no handler and, as an unhandled rejection, ends the process. Such a
 * statement fails whenever the connection is lost meanwhile, and
 * src/db/deadline.ts makes every FATAL a socket error, so a fast shutdown or
 * a switchover that catches a connection there (more likely under load, when
 * start-ups are slow) is enough. postgres.js fails the query waiting for that connection
 * with the same error (retried once or answered 503, src/db/retry.ts) and the
 * connection starts afresh on its next use, so nothing is lost by ignoring
 * it. The error carries the statement's text (postgres.js attaches it as
 * `query`), which tells these two from any statement of ours.
 */
const DRIVER_STARTUP_STATEMENT = /^\s*(?:select b\.oid, b\.typarray\s+from pg_catalog\.pg_type\b|show transaction_read_only;)/;

function isStartupStatementFailure(error: unknown, origin: string): boolean {
  const statement = (error as { query?: unknown } | null)?.query;
  return origin === 'unhandledRejection' && error instanceof Error && typeof statement === 'string' && DRIVER_STARTUP_STATEMENT.test(statement);
}

export function guardDriverCrash(warn: (message: string) => void): void {
  process.on('uncaughtException', (error, origin) => {
    if (isNullSocketWrite(error)) {
      warn('postgres.js wrote to a connection that had just closed (porsager/postgres#1154); ignored, its queries had already failed');
      return;
    }
    if (isStartupStatementFailure(error, origin)) {
      warn(`postgres.js could not set up a new connection (${error.message}); ignored, the query waiting for it failed with the same error`);
      return;
    }
    process.stderr.write(`${inspect(error)}\n`);
    process.exit(1);
  });
}
