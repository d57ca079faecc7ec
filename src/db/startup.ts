import type { Database } from './database.js';

/**
 * docs/operations.md: at start, a database that is unreachable or does not answer
 * is retried with back-off (0.25 s doubling to 5 s) for up to
 * `timeoutSeconds`; then the start fails naming the database (host, port,
 * name; never the password). A refused login (SQLSTATE class 28), a
 * missing database (3D000) or a pooler refusing a start-up parameter fails at
 * once: waiting will not fix them. Any other refusal the server (or a pooler
 * in front of it) gives is named in the log line of that attempt, so the log
 * says "refused: <reason>" rather than "not answering".
 */
/** One attempt's bound: a silent server must not use the whole start-up budget in one go. */
const ATTEMPT_MS = 5_000;

export async function waitForDatabase(
  db: Database,
  timeoutSeconds: number,
  onRetry: (problem: { refused: boolean; reason: string }, retryInMs: number) => void,
): Promise<void> {
  const until = performance.now() + timeoutSeconds * 1000;
  let delay = 250;
  for (;;) {
    const left = until - performance.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        Promise.all([db.sql`SELECT 1`, db.direct === db.sql ? undefined : db.direct`SELECT 1`]),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('no answer')), Math.max(Math.min(left, ATTEMPT_MS), 0));
        }),
      ]);
      return;
    } catch (err) {
      const code = String((err as { code?: unknown }).code ?? '');
      const message = err instanceof Error ? err.message : String(err);
      const refused = err instanceof Error && err.name === 'PostgresError';
      const reason = refused ? `${message} (SQLSTATE ${code})` : message;
      if (code.startsWith('28') || code === '3D000' || /unsupported startup parameter/i.test(message)) {
        throw new Error(`${db.description} refused the connection: ${reason}`, { cause: err });
      }
      const remaining = until - performance.now();
      if (remaining <= 0) {
        throw new Error(`${db.description} did not answer within ${timeoutSeconds} s (DB_START_TIMEOUT); last error: ${reason}`, { cause: err });
      }
      const wait = Math.min(delay, remaining);
      onRetry({ refused, reason }, wait);
      await new Promise((r) => setTimeout(r, wait));
      delay = Math.min(delay * 2, 5_000);
    } finally {
      clearTimeout(timer);
    }
  }
}
