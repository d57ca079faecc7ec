import { connect, type Socket } from 'node:net';
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
 * The server ended the session with a FATAL error (docs/operations.md#failover):
 * it is shutting down (57P01, the fast shutdown of a switchover, or its
 * postmaster died), crashed (57P02), is starting up, shutting down or in
 * recovery (57P03), or has no connection to spare (53300). `code` is the
 * server's SQLSTATE, so the retry rule (src/db/retry.ts) reads it like the
 * server's own error.
 *
 * Such an error is not handed to postgres.js as the server sent it: the
 * socket is destroyed with this error instead. postgres.js 3.4.9 keeps a
 * FATAL that arrives while a statement is in flight as that statement's
 * pending error, and nothing clears it when the socket then closes: on the
 * next connection it fails the start-up query with the old error and skips
 * the target_session_attrs check, so a pool whose primary was shut down would
 * settle on a standby and send it writes. A socket error has no such memory:
 * the statement fails like any other on a lost connection (retried once or
 * answered 503, src/db/retry.ts), and a session refused at start-up moves the
 * HostPicker on to the next host.
 */
export class SessionEnded extends Error {
  constructor(
    readonly code: string,
    serverMessage: string,
  ) {
    super(`The database ended the session: ${serverMessage} (SQLSTATE ${code})`);
    this.name = 'SessionEnded';
  }
}

/** FATAL errors that end a session before it is ready because of the server's state, not the client's start-up message (a wrong password, a missing database). */
const REFUSED_FOR_NOW = new Set(['57P01', '57P02', '57P03', '53300']);

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
 * watchdog attached. The choice of host is made here (HostPicker): postgres.js
 * is given only the first of `hosts` (src/db/url.ts, driverUrl).
 */
export function watchedSocket(deadline: Deadline, hosts: readonly { host: string; port: number }[], observer?: ExchangeObserver) {
  const picker = new HostPicker(hosts.length);
  return (options: { path?: string; ssl?: unknown }): Socket | Promise<Socket> => {
    const tls = Boolean(options.ssl);
    if (options.path) {
      const socket = connect(options.path);
      watch(socket, deadline, tls, observer);
      return socket;
    }
    const { index, delayMs } = picker.pick();
    const open = () => {
      const socket = connect(hosts[index]!.port, hosts[index]!.host);
      watch(socket, deadline, tls, observer, (usable) => picker.report(index, usable));
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
 *
 * With an observer (docs/operations.md#metrics), each exchange after start-up
 * is timed from its write to its ReadyForQuery: `starts` holds the send times
 * of the exchanges owed, oldest first, as they are answered in order. Over
 * TLS nothing is timed (the messages cannot be told apart).
 */
class Exchanges {
  private owed = 0;
  private ready = false;
  /** Set at the client's first message after start-up: whether it was Terminate ('X'), i.e. the server was turned away. */
  firstAfterReady: 'query' | 'terminate' | undefined;
  /** A message header split across chunks, gathered; headerLength bytes of it so far. */
  private readonly header = Buffer.alloc(5);
  private headerLength = 0;
  private skip = 0;
  /** The body of the ErrorResponse being read, if one is. */
  private errorBody: Buffer[] | undefined;
  /** Where in the current chunk the message being read started; -1 when it started in an earlier chunk. */
  private errorStart = -1;

  private readonly starts: number[] = [];

  constructor(
    private readonly opaque: boolean,
    private readonly observer?: ExchangeObserver,
  ) {}

  get waiting(): boolean {
    return !this.ready || this.owed > 0;
  }

  sent(data: unknown): void {
    if (this.opaque || !this.ready || !Buffer.isBuffer(data)) {
      this.owed = Math.max(this.owed, 1);
      return;
    }
    this.firstAfterReady ??= data[0] === 0x58 ? 'terminate' : 'query';
    let now = 0;
    for (let at = 0; at + 5 <= data.length; at += 1 + data.readInt32BE(at + 1)) {
      if (data[at] === 0x51 || data[at] === 0x53) {
        this.owed++;
        if (this.observer) this.started((now ||= performance.now()));
      }
    }
  }

  private started(at: number): void {
    const observer = this.observer!;
    if (this.starts.length === 0) observer.busy++;
    this.starts.push(at);
    observer.inFlight++;
  }

  private answered(): void {
    const started = this.starts.shift();
    if (started === undefined) return;
    const observer = this.observer!;
    observer.inFlight--;
    if (this.starts.length === 0) observer.busy--;
    observer.answered((performance.now() - started) / 1000);
  }

  /** The socket closed: what it still owed will never be answered. */
  closed(): void {
    const observer = this.observer;
    if (!observer) return;
    observer.open--;
    if (this.starts.length > 0) observer.busy--;
    observer.inFlight -= this.starts.length;
    this.starts.length = 0;
  }

  /**
   * Reads the server's bytes. Returns the FATAL error that ends the session
   * when one completes in `chunk`, with where in `chunk` its message starts
   * (0 when it started in an earlier chunk).
   */
  received(chunk: Buffer): { at: number; error: SessionEnded } | undefined {
    if (this.opaque) {
      this.owed = 0;
      this.ready = true;
      return undefined;
    }
    let at = 0;
    while (at < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - at);
        if (this.errorBody) this.errorBody.push(chunk.subarray(at, at + n));
        this.skip -= n;
        at += n;
        if (this.skip === 0 && this.errorBody) {
          const error = this.sessionEnded(Buffer.concat(this.errorBody));
          this.errorBody = undefined;
          if (error) return { at: Math.max(this.errorStart, 0), error };
        }
        continue;
      }
      // A message's header (a type byte and a length): read from the chunk when it holds all five
      // bytes, gathered byte by byte across chunks otherwise. Nothing is allocated per message: this
      // runs for every message of every statement.
      if (this.headerLength === 0) this.errorStart = at;
      let type: number;
      let length: number;
      if (this.headerLength === 0 && at + 5 <= chunk.length) {
        type = chunk[at]!;
        length = chunk.readInt32BE(at + 1);
        at += 5;
      } else {
        while (this.headerLength < 5 && at < chunk.length) this.header[this.headerLength++] = chunk[at++]!;
        if (this.headerLength < 5) {
          this.errorStart = -1;
          break;
        }
        type = this.header[0]!;
        length = this.header.readInt32BE(1);
        this.headerLength = 0;
      }
      if (type === 0x5a) {
        if (this.ready && this.observer) this.answered();
        this.ready = true;
        this.owed = Math.max(0, this.owed - 1);
      }
      // ErrorResponse ('E'): its fields are read, to tell a FATAL one.
      this.errorBody = type === 0x45 ? [] : undefined;
      this.skip = length - 4;
    }
    // A message that started in this chunk and goes on in the next one: its start was delivered already.
    this.errorStart = -1;
    return undefined;
  }

  /** The ErrorResponse's fields (a type byte and a string each); a SessionEnded when it ends the session. */
  private sessionEnded(body: Buffer): SessionEnded | undefined {
    const fields = new Map<string, string>();
    for (let at = 0; at < body.length && body[at] !== 0;) {
      const end = body.indexOf(0, at + 1);
      if (end < 0) break;
      fields.set(String.fromCharCode(body[at]!), body.toString('utf8', at + 1, end));
      at = end + 1;
    }
    // 'V': the severity, never translated (PostgreSQL 9.6 and later); 'S' may be.
    const severity = fields.get('V') ?? fields.get('S') ?? '';
    const code = fields.get('C') ?? '';
    if (severity !== 'FATAL' && severity !== 'PANIC') return undefined;
    // Once the session is ready any FATAL ends it; before that only the server's state is worth another host.
    if (!this.ready && !REFUSED_FOR_NOW.has(code)) return undefined;
    return new SessionEnded(code, fields.get('M') ?? 'no message');
  }
}

/** Over TLS the messages cannot be read: a connection that lives this long counts as usable. */
const OPAQUE_USABLE_AFTER_MS = 2_000;

/**
 * `report` learns once whether the server was usable: the client went on to
 * send a query after start-up (usable), or it closed or turned the server
 * away before that (not usable).
 */
function watch(socket: Socket, deadline: Deadline, tls: boolean, observer?: ExchangeObserver, report?: (usable: boolean) => void): void {
  const exchanges = new Exchanges(tls, observer);
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
  /** The server ended the session: whatever else arrives is not passed on. */
  let ended = false;

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

  // The server's bytes are read before postgres.js gets them (its 'data'
  // listener comes later, and a listener could not hold bytes back): a FATAL
  // that ends the session is not passed on, the socket is destroyed with it.
  //
  // The socket's end reaches postgres.js a turn of the event loop late, its
  // 'error' (if any) and its 'close' together. postgres.js 3.4.9 sends small
  // writes from a setImmediate; when the socket closes before that ran, it
  // cancels the timer but keeps the unsent bytes and the cancelled timer's
  // handle, so that connection's next start-up message is never sent and each
  // later use of it waits out the connect timeout. A turn late, the pending
  // write has gone (to the destroyed socket, which drops it) and the
  // connection starts clean. The two events go together because a statement
  // handed to the connection between them would be failed by neither.
  const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
  let failure: unknown[] | undefined;
  socket.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event === 'error') {
      failure = args;
      return true;
    }
    if (event === 'close') {
      setImmediate(() => {
        if (failure) emit('error', ...failure);
        emit('close', ...args);
      });
      return true;
    }
    if (event !== 'data') return emit(event, ...args);
    if (ended) return false;
    const chunk = args[0] as Buffer;
    lastHeard = performance.now();
    spokeLast = false;
    const fatal = exchanges.received(chunk);
    if (!fatal) return emit('data', chunk);
    ended = true;
    if (fatal.at > 0) emit('data', chunk.subarray(0, fatal.at));
    socket.destroy(fatal.error);
    return true;
  }) as Socket['emit'];
  socket.once('close', () => {
    clearTimeout(timer);
    clearTimeout(opaqueTimer);
    exchanges.closed();
    outcome(false);
  });
}
