import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * One owner per DATA_DIR (docs/operations.md). Two PGlite processes on one
 * directory both answer 200 and overwrite each other's files, so the second
 * must refuse to start.
 *
 * Why flock(1) in a helper process: the lock must be an OS lock that dies
 * with its owner, so a `kill -9` (or a lost machine) never leaves a stale
 * lock behind and no PID file has to be guessed stale. Node has no flock();
 * a native addon (fs-ext) would need a compiler in every `npm ci` and in the
 * image's build stages. flock(1) from util-linux is on every Debian/Ubuntu
 * system and in the node:*-slim images. The helper takes the lock without
 * waiting (-n), prints "locked", then sits reading its stdin, a pipe from
 * this process: when this process exits for whatever reason, even kill -9,
 * the pipe closes, the helper exits and the kernel drops the lock. Two
 * processes started at the same moment race in the kernel: one wins.
 * The helper runs in its own process group, so a Ctrl-C in the terminal
 * reaches only the service, which keeps the lock until its shutdown is done.
 * Not chosen: an abstract-namespace socket (per network namespace, so two
 * containers sharing a volume would both get it) and a PID file alone
 * (stale after kill -9, and PIDs repeat across containers).
 *
 * `.owner` beside the lock records who holds it, only for the refusal message.
 */
export class DataDirBusyError extends Error {}

const LOCK_FILE = '.lock';
const OWNER_FILE = '.owner';
const CONFLICT_EXIT = 75;

export interface DataDirLock {
  release(): Promise<void>;
}

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const dir = resolve(dataDir);
  const helper = spawn('flock', ['-n', '-E', String(CONFLICT_EXIT), join(dir, LOCK_FILE), 'sh', '-c', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    detached: true,
  });
  const outcome = await new Promise<'locked' | number | Error>((done) => {
    helper.stdout.once('data', () => done('locked'));
    helper.once('exit', (code) => done(code ?? -1));
    helper.once('error', (err) => done(err));
  });
  if (outcome instanceof Error) {
    throw new Error(`Cannot lock DATA_DIR ${dir}: flock(1) from util-linux is needed to guard it (${outcome.message})`);
  }
  if (outcome !== 'locked') {
    if (outcome !== CONFLICT_EXIT) throw new Error(`Cannot lock DATA_DIR ${dir}: flock exited with ${outcome}`);
    throw new DataDirBusyError(`DATA_DIR ${dir} is in use by ${await describeOwner(dir)}; one process per data directory`);
  }
  // The helper must not keep this process alive, nor die before it.
  helper.unref();
  (helper.stdout as unknown as { unref(): void }).unref();
  (helper.stdin as unknown as { unref(): void }).unref();
  await writeFile(join(dir, OWNER_FILE), `${process.pid} ${hostname()} ${new Date().toISOString()}\n`);
  let releasing = false;
  helper.once('exit', () => {
    if (!releasing) console.error(`The lock on DATA_DIR ${dir} was lost (its flock helper ended); stop this process before starting another`);
  });
  return {
    async release() {
      releasing = true;
      if (helper.exitCode !== null) return;
      const exited = new Promise((r) => helper.once('exit', r));
      // Unreferenced, the helper would let the event loop empty while we wait
      // for it, and Node would exit (code 0) in the middle of a close.
      helper.ref();
      helper.stdin.end();
      await exited;
    },
  };
}

async function describeOwner(dir: string): Promise<string> {
  // The winner writes .owner just after taking the lock; when both started
  // at the same moment, give it that moment.
  await new Promise((r) => setTimeout(r, 200));
  const [pid, host, since] = (await readFile(join(dir, OWNER_FILE), 'utf8').catch(() => '')).trim().split(' ');
  return pid ? `process ${pid} on host ${host} (since ${since})` : 'another process';
}
