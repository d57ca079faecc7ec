import type { Sql, Tx } from './database.js';

/**
 * What a lost connection means for a request (docs/operations.md#retries):
 * - a transaction whose connection died before its COMMIT was sent was rolled
 *   back by the server, so it is run once more, on a fresh connection;
 * - a read is run once more likewise (src/http/read.retry.ts);
 * - a transaction whose connection died after its COMMIT was sent may or may
 *   not have committed: never retried, answered 503 (CommitOutcomeUnknown);
 *   unless it was READ ONLY, whose outcome changes nothing: run once more.
 * - a transaction PostgreSQL rolled back to break a deadlock is run again
 *   (a few times): the rows it waited for are then free or changed, and it
 *   answers from what the other write left (docs/architecture.md, row locks).
 * Everything else a database can throw is the request's answer as it is.
 * A second attempt waits a moment first (pauseBeforeRetry).
 */

/** deadlock_detected: this transaction was chosen to be rolled back whole. */
const DEADLOCK = '40P01';
/** Attempts a write gets when it keeps being a deadlock's victim; then 503. */
const DEADLOCK_ATTEMPTS = 5;

/**
 * The connection is gone (closed, reset, cut by the statement deadline, the
 * server terminated it or is shutting down), so whatever it had open was
 * rolled back; the statement was not refused for what it said.
 */
const CONNECTION_LOST = new Set([
  'CONNECTION_DESTROYED',
  'CONNECTION_CLOSED',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  // admin_shutdown (pg_terminate_backend, a fast shutdown), crash_shutdown, cannot_connect_now.
  '57P01',
  '57P02',
  '57P03',
]);

/** The error's code (a SQLSTATE, or the driver's or the socket's code), "" when it has none. */
export function codeOf(error: unknown): string {
  return String((error as { code?: unknown } | null)?.code ?? '');
}

/** A PostgreSQL error (it carries a SQLSTATE), as opposed to a driver or socket error. */
function fromServer(error: unknown): boolean {
  return error instanceof Error && error.name === 'PostgresError';
}

/**
 * Failures that were already a second attempt's. A read's handler runs a
 * transaction of its own (the department chart), and each retries: the mark
 * keeps a lost connection at one retry, not one per layer.
 */
const SECOND_ATTEMPT = new WeakSet<object>();

function secondAttemptFailed(error: unknown): never {
  if (typeof error === 'object' && error !== null) SECOND_ATTEMPT.add(error);
  throw error;
}

/**
 * Worth running again: the connection was lost, and not because the database
 * stopped answering (a statement cut by the deadline, src/db/deadline.ts,
 * fails with STATEMENT_DEADLINE, not a lost connection: a second attempt
 * would only wait again, past the request's own deadline), and this was not
 * already the second attempt.
 */
export function worthRetrying(error: unknown): boolean {
  return isConnectionLost(error) && !SECOND_ATTEMPT.has(error as object);
}

function isConnectionLost(error: unknown): boolean {
  const code = codeOf(error);
  // SQLSTATE class 08: connection exception.
  return CONNECTION_LOST.has(code) || (fromServer(error) && code.startsWith('08'));
}

/**
 * Failures that mean "the database cannot be reached or cannot take this now",
 * not "this request was wrong": 503, retry later.
 */
const UNAVAILABLE = new Set([
  // A database that stays silent (src/db/deadline.ts) or does not accept a
  // connection in time: running the work again would only wait again, past the
  // request's own deadline.
  'STATEMENT_DEADLINE',
  'CONNECT_TIMEOUT',
  // The pool was ended: the process is shutting down.
  'CONNECTION_ENDED',
  'ENOTFOUND',
  'EAI_AGAIN',
  // too_many_connections, query_canceled.
  '53300',
  '57014',
  // read_only_sql_transaction: the server we reached is (now) a standby, in a failover's first seconds.
  '25006',
  // A write that was a deadlock's victim DEADLOCK_ATTEMPTS times in a row.
  DEADLOCK,
  'COMMIT_OUTCOME_UNKNOWN',
]);

export function isUnavailable(error: unknown): boolean {
  return isConnectionLost(error) || UNAVAILABLE.has(codeOf(error));
}

/**
 * How long a second attempt waits. A connection is usually lost because its
 * server is going away (a fast shutdown ends every session within
 * milliseconds, and a server that is shutting down still accepts connections
 * only to refuse them with 57P03): asked again at once, the same server
 * refuses the retry too. 50 ms lets it finish going, so the retry's new
 * connection finds the next host (src/db/host.picker.ts).
 */
const RETRY_PAUSE_MS = 50;

export function pauseBeforeRetry(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
}

/** The connection died after COMMIT was sent: the transaction may have committed or not. */
export class CommitOutcomeUnknown extends Error {
  readonly code = 'COMMIT_OUTCOME_UNKNOWN';
  constructor(cause: unknown) {
    super('The database connection was lost while the change was being committed; it may or may not have been applied', { cause });
  }
}

/**
 * Session settings a pooler will not carry from the start-up message, set for
 * each transaction instead. They go out in the same round trip as the
 * transaction's first statement (postgres.js pipelines on the reserved
 * connection), so they cost no extra wait.
 * - idle_in_transaction_session_timeout: a transaction whose client vanished
 *   (a cut network) releases its locks on the server's own clock.
 * - jit off: the recursive walks over a big subtree are estimated at millions
 *   of rows, and compiling their plans took longer than running them
 *   (docs/benchmark.md#big-tenants).
 */
function applySettings(tx: Tx): void {
  void tx`SELECT set_config('idle_in_transaction_session_timeout', '60s', true), set_config('jit', 'off', true)`.execute();
}

/**
 * Every write runs here: one transaction, retried once when its connection
 * was lost before the COMMIT went out. `work` may therefore run twice; the
 * first run's changes were rolled back with its connection.
 *
 * When the connection closes, postgres.js fails the transaction with
 * CONNECTION_CLOSED, whatever the statement in flight was told; the error
 * `work` itself met says why (a statement cut by the deadline, say), so that
 * one is judged.
 */
export async function transaction<T>(sql: Sql, work: (tx: Tx) => Promise<T>, mode = ''): Promise<T> {
  const readOnly = /\bread only\b/i.test(mode);
  let deadlocks = 0;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1 + deadlocks) await pauseBeforeRetry();
    let committing = false;
    let workFailure: unknown;
    try {
      return (await sql.begin(mode, async (tx) => {
        applySettings(tx);
        try {
          const result = await work(tx);
          committing = true;
          return result;
        } catch (err) {
          workFailure = err;
          throw err;
        }
      })) as T;
    } catch (caught) {
      const err = workFailure ?? caught;
      // Rolled back whole by the server, connection intact: nothing of it stayed.
      if (codeOf(err) === DEADLOCK && fromServer(err) && ++deadlocks < DEADLOCK_ATTEMPTS) {
        // A moment, different for each victim, so the winner finishes before the victims meet again.
        await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * deadlocks));
        continue;
      }
      if (!isConnectionLost(err)) throw err;
      // A read-only transaction changed nothing, committed or not.
      if (committing && !readOnly) throw new CommitOutcomeUnknown(err);
      if (attempt > 1 + deadlocks) secondAttemptFailed(err);
      if (!worthRetrying(err)) throw err;
    }
  }
}

/** A read that is run once more when its connection was lost. */
export async function retryRead<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (!worthRetrying(err)) throw err;
  }
  await pauseBeforeRetry();
  return read().catch(secondAttemptFailed);
}
