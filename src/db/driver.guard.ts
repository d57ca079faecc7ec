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
 * connect timeout. Any other uncaught exception still ends the process as
 * Node would (printed, exit code 1).
 */
function isNullSocketWrite(error: unknown): boolean {
  return (
    error instanceof TypeError &&
    error.message.includes("reading 'write'") &&
    /\bnextWrite\b/.test(error.stack ?? '') &&
    /[\\/]postgres[\\/](?:cjs[\\/])?src[\\/]connection\.js/.test(error.stack ?? '')
  );
}

export function guardDriverCrash(warn: (message: string) => void): void {
  process.on('uncaughtException', (error) => {
    if (isNullSocketWrite(error)) {
      warn('postgres.js wrote to a connection that had just closed (porsager/postgres#1154); ignored, its queries had already failed');
      return;
    }
    process.stderr.write(`${inspect(error)}\n`);
    process.exit(1);
  });
}
