import type { Socket } from 'node:net';
import { ExchangeReader } from './exchange.reader.js';
import type { ExchangeObserver } from './exchange.observer.js';

/**
 * Client-side statement deadline for postgres.js (docs/operations.md: a database
 * that stops answering turns requests into 503 within 10 s).
 *
 * A server-side statement_timeout cannot help when the network or the server
 * is frozen: its error never arrives. TCP keep-alive does not help either
 * when something in between (a proxy, a load balancer) keeps the socket
 * alive. So every connection's socket is watched here: from the moment a
 * message is written until the server's ReadyForQuery ends the exchange, the
 * socket must not stay silent for longer than the deadline; if it does, it
 * is destroyed. postgres.js then fails the statement with this error
 * (answered 503, never run again: src/db/retry.ts), an open transaction is
 * lost with the connection (the server rolls it back when it notices), and
 * the pool opens a fresh connection on the next statement, so the service
 * recovers once the database answers again. An idle connection, or one idle
 * inside a transaction between statements, is never timed out here.
 */
class StatementDeadlineError extends Error {
  readonly code = 'STATEMENT_DEADLINE';
}

/** The mutable deadline, so start-up can lift it while migrations run. */
export interface Deadline {
  ms: number;
}

/** Over TLS the messages cannot be read: a connection that lives this long counts as usable. */
const OPAQUE_USABLE_AFTER_MS = 2_000;

/**
 * Watches `socket` (before postgres.js attaches its own listeners) with the
 * deadline and, when given, the metrics' observer. `report` learns once
 * whether the server was usable: the client went on to send a statement after
 * start-up (usable), or it closed or turned the server away before that.
 */
export function watch(socket: Socket, deadline: Deadline, tls: boolean, observer?: ExchangeObserver, report?: (usable: boolean) => void): void {
  const exchanges = new ExchangeReader(tls, observer);
  if (observer) observer.open++;
  let reported = false;
  const outcome = (usable: boolean) => {
    if (reported || !report) return;
    reported = true;
    report(usable);
  };
  const opaqueTimer = tls && report ? setTimeout(() => outcome(true), OPAQUE_USABLE_AFTER_MS).unref() : undefined;
  let lastHeard = performance.now();
  let timer: NodeJS.Timeout | undefined;
  // Belt and braces for the message count: bytes written and nothing heard
  // since is always an exchange in progress, whatever the count says.
  let spokeLast = false;
  const waiting = () => exchanges.waiting || spokeLast;

  const check = () => {
    timer = undefined;
    if (!waiting() || deadline.ms <= 0 || socket.destroyed) return;
    const silent = performance.now() - lastHeard;
    if (silent >= deadline.ms) {
      socket.destroy(new StatementDeadlineError(`The database did not answer within ${deadline.ms / 1000} s`));
    } else {
      timer = setTimeout(check, deadline.ms - silent);
      timer.unref();
    }
  };

  // Writes are seen by wrapping write (a socket has no event for them); the
  // server's bytes by a 'data' listener, added before postgres.js adds its own.
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  socket.write = ((...args: unknown[]) => {
    if (!waiting()) lastHeard = performance.now();
    spokeLast = true;
    exchanges.sent(args[0]);
    if (exchanges.firstAfterReady) outcome(exchanges.firstAfterReady === 'query');
    if (!timer && deadline.ms > 0) {
      timer = setTimeout(check, deadline.ms);
      timer.unref();
    }
    return write(...args);
  }) as Socket['write'];
  socket.on('data', (chunk: Buffer) => {
    lastHeard = performance.now();
    spokeLast = false;
    exchanges.received(chunk);
  });
  socket.once('close', () => {
    clearTimeout(timer);
    clearTimeout(opaqueTimer);
    exchanges.closed();
    outcome(false);
  });
}
