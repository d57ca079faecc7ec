import { connect, type Socket } from 'node:net';

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
 * is destroyed. postgres.js then fails the query with a connection error
 * (answered 503), an open transaction is lost with the connection (the server
 * rolls it back when it notices), and the pool opens a fresh connection on
 * the next query, so the service recovers once the database answers again.
 * An idle connection, or one idle inside a transaction between statements,
 * is never timed out here.
 */
class StatementDeadlineError extends Error {
  readonly code = 'STATEMENT_DEADLINE';
}

/** The mutable deadline, so start-up can lift it while migrations run. */
export interface Deadline {
  ms: number;
}

/** A postgres.js `socket` option: connects like postgres.js would, with the watchdog attached. */
export function watchedSocket(deadline: Deadline) {
  return (options: { host: string[]; port: number[]; path?: string; ssl?: unknown }): Socket => {
    const socket = options.path ? connect(options.path) : connect(options.port[0]!, options.host[0]!);
    watch(socket, deadline, Boolean(options.ssl));
    return socket;
  };
}

/**
 * Counts the exchanges the server still owes an answer. Each Query ('Q') or
 * Sync ('S') the client sends is answered by exactly one ReadyForQuery ('Z');
 * postgres.js writes whole messages and may pipeline several queries. Before
 * the first ReadyForQuery (start-up, authentication) the server always owes one.
 * Over TLS the bytes cannot be read, so any answer counts as the end.
 */
class Exchanges {
  private owed = 0;
  private ready = false;
  private header = Buffer.alloc(0);
  private skip = 0;

  constructor(private readonly opaque: boolean) {}

  get waiting(): boolean {
    return !this.ready || this.owed > 0;
  }

  sent(data: unknown): void {
    if (this.opaque || !this.ready || !Buffer.isBuffer(data)) {
      this.owed = Math.max(this.owed, 1);
      return;
    }
    for (let at = 0; at + 5 <= data.length; at += 1 + data.readInt32BE(at + 1)) {
      if (data[at] === 0x51 || data[at] === 0x53) this.owed++;
    }
  }

  received(chunk: Buffer): void {
    if (this.opaque) {
      this.owed = 0;
      this.ready = true;
      return;
    }
    let at = 0;
    while (at < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - at);
        this.skip -= n;
        at += n;
        continue;
      }
      const need = 5 - this.header.length;
      this.header = Buffer.concat([this.header, chunk.subarray(at, at + need)]);
      at += Math.min(need, chunk.length - at);
      if (this.header.length < 5) break;
      if (this.header[0] === 0x5a) {
        this.ready = true;
        this.owed = Math.max(0, this.owed - 1);
      }
      this.skip = this.header.readInt32BE(1) - 4;
      this.header = Buffer.alloc(0);
    }
  }
}

function watch(socket: Socket, deadline: Deadline, tls: boolean): void {
  const exchanges = new Exchanges(tls);
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

  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  socket.write = ((...args: unknown[]) => {
    if (!waiting()) lastHeard = performance.now();
    spokeLast = true;
    exchanges.sent(args[0]);
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
  socket.once('close', () => clearTimeout(timer));
}
