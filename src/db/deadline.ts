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

/**
 * How many connections the deadline has cut so far, process-wide. postgres.js
 * reports such a cut to a transaction as a plain CONNECTION_CLOSED, so the
 * retry rule (src/db/retry.ts) compares this count before and after an
 * attempt: a database that stopped answering is not asked again.
 */
let cuts = 0;
export function deadlineCuts(): number {
  return cuts;
}

/** The mutable deadline, so start-up can lift it while migrations run. */
export interface Deadline {
  ms: number;
}

/**
 * A postgres.js `socket` option: connects like postgres.js would, with the
 * watchdog attached. postgres.js hands the dialling of a multi-host URL to a
 * socket factory, so the choice of host is made here too (HostPicker).
 */
export function watchedSocket(deadline: Deadline) {
  let picker: HostPicker | undefined;
  return (options: { host: string[]; port: number[]; path?: string; ssl?: unknown }): Socket | Promise<Socket> => {
    const tls = Boolean(options.ssl);
    if (options.path) {
      const socket = connect(options.path);
      watch(socket, deadline, tls);
      return socket;
    }
    const hosts = (picker ??= new HostPicker(options.host.length));
    const { index, delayMs } = hosts.pick();
    const open = () => {
      const socket = connect(options.port[index]!, options.host[index]!);
      watch(socket, deadline, tls, (usable) => hosts.report(index, usable));
      return socket;
    };
    return delayMs > 0 ? new Promise<Socket>((resolve) => setTimeout(() => resolve(open()), delayMs)) : open();
  };
}

/**
 * docs/operations.md#failover: with several hosts, a new connection dials the
 * host the last usable connection went to. A host that refuses (down, or a
 * standby that postgres.js turns away for target_session_attrs) moves the
 * choice on to the next host. Once every host has failed in a row, each
 * further dial waits a little longer (up to 1 s), so a pool waiting for a
 * promotion does not spin.
 */
class HostPicker {
  private current = 0;
  private failures = 0;

  constructor(private readonly count: number) {}

  pick(): { index: number; delayMs: number } {
    const rounds = Math.floor(this.failures / this.count);
    const delayMs = this.count > 1 && rounds > 0 ? Math.min(50 * 2 ** (rounds - 1), 1_000) : 0;
    return { index: this.current, delayMs };
  }

  report(index: number, usable: boolean): void {
    if (usable) {
      this.failures = 0;
      this.current = index;
      return;
    }
    this.failures++;
    if (index === this.current) this.current = (this.current + 1) % this.count;
  }
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
  /** Set at the client's first message after start-up: whether it was Terminate ('X'), i.e. the server was turned away. */
  firstAfterReady: 'query' | 'terminate' | undefined;
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
    this.firstAfterReady ??= data[0] === 0x58 ? 'terminate' : 'query';
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

/** Over TLS the messages cannot be read: a connection that lives this long counts as usable. */
const OPAQUE_USABLE_AFTER_MS = 2_000;

/**
 * `report` learns once whether the server was usable: the client went on to
 * send a query after start-up (usable), or it closed or turned the server
 * away before that (not usable).
 */
function watch(socket: Socket, deadline: Deadline, tls: boolean, report?: (usable: boolean) => void): void {
  const exchanges = new Exchanges(tls);
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
      cuts++;
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
    outcome(false);
  });
}
