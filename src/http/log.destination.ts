import { destination } from 'pino';

/** A batch is handed to the writer once it holds this many characters (about 55 request lines)... */
const BATCH_CHARS = 16 * 1024;
/** ...or this long after its first line, so a quiet service shows each line within a quarter of a second. */
const BATCH_MS = 250;
/** If stdout stops draining, lines beyond this many bytes waiting are dropped, not held in memory or stalling requests. */
const MAX_WAITING_BYTES = 8 * 2 ** 20;

/**
 * The service's log destination: stdout, written without blocking the event
 * loop (docs/operations.md#logs). A write per line, even an asynchronous
 * one, is a system call on libuv's thread pool per request (a synchronous
 * one costs more, and a stdout that stops draining would stall every
 * request), so lines are gathered into batches.
 *
 * The batch is gathered here, in an array, and handed joined to pino's
 * asynchronous writer (sonic-boom). sonic-boom can gather by itself, but it
 * measures the bytes of its whole pending buffer on every line it is given
 * (Buffer.byteLength, which first flattens the joined string), so each line
 * cost a copy of everything gathered before it, several times what the line
 * itself costs to build (docs/benchmark.md, the request line's writes).
 * Here a line costs an array push; sonic-boom sees one string per batch.
 *
 * pino's writer flushes when the process exits, a crash included, and the
 * batch gathered here is handed to it first (the exit hook below): only a
 * `kill -9` loses the lines of the last moment.
 */
export class BatchedStdout {
  private readonly writer = destination({ dest: 1, sync: false, maxLength: MAX_WAITING_BYTES, minLength: 1 });
  private batch: string[] = [];
  private chars = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly handOver = () => {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.batch.length === 0) return;
    const text = this.batch.join('');
    this.batch = [];
    this.chars = 0;
    this.writer.write(text);
  };

  constructor() {
    process.once('exit', () => {
      // A stdout that is gone (closed, not a broken pipe, which pino already quiets) must not turn a clean exit into
      // an uncaught error: the lines are lost either way.
      try {
        this.flushSync();
      } catch {
        // nothing left to write to
      }
    });
  }

  write(line: string): boolean {
    this.batch.push(line);
    this.chars += line.length;
    if (this.chars >= BATCH_CHARS) this.handOver();
    else this.timer ??= setTimeout(this.handOver, BATCH_MS).unref();
    return true;
  }

  /** pino's logger.flush(cb): the batch and everything pending written, then cb (main.ts, at shutdown). */
  flush(cb?: (err?: Error) => void): void {
    this.handOver();
    this.writer.flush(cb);
  }

  /** The batch and everything pending written before it returns (the exit hook). */
  flushSync(): void {
    this.handOver();
    this.writer.flushSync();
  }
}

/** stdout is one per process: every app built without a log stream shares one destination (tests build many). */
let stdout: BatchedStdout | undefined;
export function stdoutDestination(): BatchedStdout {
  return (stdout ??= new BatchedStdout());
}
