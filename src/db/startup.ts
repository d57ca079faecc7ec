import type { Database, Sql } from './database.js';
import { TIMED_OUT, within } from '../core/timeout.js';
import { codeOf } from './retry.js';

/**
 * docs/operations.md#database-waits: at start, a database that is unreachable
 * or does not answer is retried with back-off (0.25 s doubling to 5 s) for up
 * to `timeoutSeconds`; then the start fails naming the database (host, port,
 * name; never the password). A refusal that waiting will not change fails at
 * once (finalRefusal). Any other refusal the server (or a pooler in front of
 * it) gives is named in the log line of that attempt, so the log says
 * "refused: <reason>" rather than "not answering". Behind a pooler both the
 * pool's URL and DATABASE_DIRECT_URL are tried, and every message names the
 * one that failed, the direct one marked "(direct)".
 */
/** One attempt's bound: a silent server must not use the whole start-up budget in one go. */
const ATTEMPT_MS = 5_000;

/**
 * Refusals that stay the same however long the start waits: a refused login
 * (SQLSTATE class 28), a missing database (3D000), a start-up parameter the
 * server does not know (42704). PgBouncer gives its own refusals, and those
 * of the server it logs in to, as protocol_violation (08P01) with only the
 * message to tell them apart; its passing troubles ("pgbouncer cannot connect
 * to server", "server login has been failing, try again later") carry the
 * same code and are retried like any unreachable server
 * (docs/operations.md#behind-a-pooler).
 */
const POOLER_FINAL = /no such database|does not exist|unsupported startup parameter|authentication failed|no such user|not allowed/i;

function finalRefusal(code: string, message: string): boolean {
  return code.startsWith('28') || code === '3D000' || code === '42704' || (code === '08P01' && POOLER_FINAL.test(message));
}

export interface StartProblem {
  /** The database that failed: Database.description, with " (direct)" for DATABASE_DIRECT_URL's. */
  where: string;
  /** The server or pooler answered with an error, rather than not at all. */
  refused: boolean;
  reason: string;
}

/** Resolves to the first failure of the probes, or null when every one answered. */
async function probe(targets: [Sql, string][]): Promise<{ where: string; err: unknown } | null> {
  const failures = await Promise.all(
    targets.map(([sql, where]) =>
      sql`SELECT 1`.then(
        () => null,
        (err: unknown) => ({ where, err }),
      ),
    ),
  );
  const failed = failures.filter((f) => f !== null);
  // A final refusal of one decides the start, whatever the other is doing.
  return failed.find((f) => finalRefusal(codeOf(f.err), messageOf(f.err))) ?? failed[0] ?? null;
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

export async function waitForDatabase(
  db: Pick<Database, 'sql' | 'direct' | 'description' | 'directDescription'>,
  timeoutSeconds: number,
  onRetry: (problem: StartProblem, retryInMs: number) => void,
): Promise<void> {
  const targets: [Sql, string][] = [[db.sql, db.description]];
  if (db.direct !== db.sql) targets.push([db.direct, `${db.directDescription} (direct)`]);
  const until = performance.now() + timeoutSeconds * 1000;
  let delay = 250;
  for (;;) {
    const left = until - performance.now();
    const answer = await within(Math.max(Math.min(left, ATTEMPT_MS), 0), probe(targets));
    const failure = answer === TIMED_OUT ? { where: targets.map(([, where]) => where).join(' and '), err: new Error('no answer') } : answer;
    if (failure === null) return;
    const { where, err } = failure;
    const code = codeOf(err);
    const message = messageOf(err);
    // A server that ended the session (starting up, shutting down, full) refused it too.
    const refused = err instanceof Error && err.name === 'PostgresError';
    const reason = refused ? `${message} (SQLSTATE ${code})` : message;
    if (finalRefusal(code, message)) throw new Error(`${where} refused the connection: ${reason}`, { cause: err });
    const remaining = until - performance.now();
    if (remaining <= 0) {
      throw new Error(`${where} did not answer within ${timeoutSeconds} s (DB_START_TIMEOUT); last error: ${reason}`, { cause: err });
    }
    const wait = Math.min(delay, remaining);
    onRetry({ where, refused, reason }, wait);
    await new Promise((r) => setTimeout(r, wait));
    delay = Math.min(delay * 2, 5_000);
  }
}
