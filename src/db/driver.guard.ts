import { inspect } from 'node:util';

/**
 * postgres.js 3.4.9 (porsager/postgres#1154, fix proposed in #1168) buffers a
 * small write and sends it from a setImmediate callback; when the connection
 * closed in between (a failover, a pooler dropping server connections, the
 * pool ending at shutdown) that callback reads `write` of a null socket and
 * throws outside any promise, which ends the whole process. By then the
 * connection's queries have already been failed with CONNECTION_CLOSED (and
 * answered 503 or retried), so the buffered bytes are moot: this guard
 * recognises exactly that error and keeps the process. Any other uncaught
 * exception still ends the process as Node would (printed, exit code 1).
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
