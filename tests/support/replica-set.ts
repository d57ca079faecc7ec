import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { vi } from 'vitest';

// A PostgreSQL primary and a streaming standby of its own, for the failover
// test (tests/failover.test.ts): real servers on free loopback ports, in a
// temporary directory, that a test can kill -9 and promote. Commits wait for
// the standby (synchronous_standby_names names it, synchronous_commit=on), so
// a write acknowledged by the primary is on the standby too and no promotion
// can lose it. fsync is off: the machine does not crash in a test, and the
// servers start in a second or two. Everything is stopped by PID; the
// shared memory segment a SIGKILLed postmaster leaves behind is removed.

const exec = promisify(execFile);

/** The newest PostgreSQL server binaries installed the Debian way, or undefined. */
export function postgresBinaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && Number(v) >= 14)
    .sort((a, b) => Number(b) - Number(a));
  const bin = versions.map((v) => join(root, v, 'bin')).find((dir) => ['initdb', 'pg_ctl', 'pg_basebackup'].every((b) => existsSync(join(dir, b))));
  // initdb refuses to run as root: as root the servers run as the `postgres` user.
  if (bin && process.getuid?.() === 0 && !/^postgres:/m.test(readFileSync('/etc/passwd', 'utf8'))) return undefined;
  return bin;
}

/**
 * Runs a command as the user the servers run as: `postgres` when the tests
 * run as root (initdb refuses root), else the tests' own user.
 */
async function asServerUser(file: string, args: string[]): Promise<string> {
  const [command, argv] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
  const { stdout } = await exec(command, argv, { cwd: '/' });
  return stdout;
}

export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Whether `pid` still runs: a zombie has ended (its reaper, not us, may take a while to collect it). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Polls `check` every 50 ms until it holds; throws naming `what` after `timeoutMs`. */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  await vi.waitFor(
    async () => {
      if (!(await check())) throw new Error(`timed out waiting for ${what}`);
    },
    { timeout: timeoutMs, interval: 50 },
  );
}

/** The child processes of `pid`, from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid ...; comm may hold spaces or parentheses.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export class PostgresServer {
  /** The postmaster, once started. */
  pid = 0;
  /** The System V shared memory segment id (postmaster.pid), removed after a SIGKILL. */
  private shmid: number | undefined;
  /** Processes left behind by a SIGKILLed postmaster, waited for before its shared memory is removed. */
  private orphans: number[] = [];

  constructor(
    private readonly set: ReplicaSet,
    readonly name: string,
    readonly port: number,
    readonly dataDir: string,
    private readonly settings: Record<string, string>,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async start(): Promise<void> {
    const options = Object.entries({
      port: String(this.port),
      listen_addresses: '127.0.0.1',
      unix_socket_directories: this.set.dir,
      fsync: 'off',
      full_page_writes: 'off',
      synchronous_commit: 'on',
      shared_buffers: '16MB',
      max_connections: '40',
      wal_level: 'replica',
      max_wal_senders: '4',
      hot_standby: 'on',
      cluster_name: this.name,
      ...this.settings,
    })
      .map(([k, v]) => `-c ${k}=${v}`)
      .join(' ');
    await this.set.asPostgres('pg_ctl', ['-D', this.dataDir, '-l', `${this.dataDir}.log`, '-w', '-t', '30', '-o', options, 'start']);
    const lines = (await readFile(join(this.dataDir, 'postmaster.pid'), 'utf8')).split('\n');
    this.pid = Number(lines[0]);
    // Line 7: the shared memory key and id.
    const shmid = Number(lines[6]?.trim().split(/\s+/)[1]);
    this.shmid = Number.isInteger(shmid) ? shmid : undefined;
  }

  /** kill -9 of the postmaster, as when its machine dies; its backends find it gone and end on their own. */
  kill(): void {
    if (!this.pid || !alive(this.pid)) return;
    this.orphans = childrenOf(this.pid);
    process.kill(this.pid, 'SIGKILL');
  }

  /** A fast shutdown (SIGINT): sessions are ended with 57P01, then the postmaster exits. */
  async shutDown(timeoutMs = 15_000): Promise<void> {
    if (!this.pid || !alive(this.pid)) return;
    process.kill(this.pid, 'SIGINT');
    await until(`${this.name} to shut down`, () => !alive(this.pid), timeoutMs);
  }

  async promote(): Promise<void> {
    await this.set.asPostgres('pg_ctl', ['-D', this.dataDir, '-w', '-t', '30', 'promote']);
  }

  /**
   * Stops what is left of this server, by PID: an immediate shutdown
   * (SIGQUIT: no checkpoint, the data directory is thrown away next), or
   * SIGKILL for the processes a killed postmaster left behind; then removes
   * that postmaster's shared memory segment.
   */
  async stop(): Promise<void> {
    if (this.pid && alive(this.pid)) {
      process.kill(this.pid, 'SIGQUIT');
      await until(`${this.name} to stop`, () => !alive(this.pid), 10_000).catch(() => process.kill(this.pid, 'SIGKILL'));
    }
    for (const pid of this.orphans) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await until(`the processes of ${this.name} to end`, () => this.orphans.every((pid) => !alive(pid)), 5_000);
    // A postmaster that shut down removed its segment; a killed one could not.
    if (this.orphans.length > 0 && this.shmid !== undefined) await exec('ipcrm', ['-m', String(this.shmid)]).catch(() => {});
  }
}

export class ReplicaSet {
  primary!: PostgresServer;
  standby!: PostgresServer;

  private constructor(
    /** The temporary directory of both data directories, their logs and their sockets, owned by the server's user. */
    readonly dir: string,
    private readonly bin: string,
  ) {}

  /** Runs a server binary as the user that owns the data directories. */
  asPostgres(binary: string, args: string[]): Promise<string> {
    return asServerUser(join(this.bin, binary), args);
  }

  /** A primary with a synchronous standby, both running. */
  static async start(bin: string): Promise<ReplicaSet> {
    const dir = (await asServerUser('mktemp', ['-d', '/tmp/pg-replicas-XXXXXX'])).trim();
    const set = new ReplicaSet(dir, bin);
    try {
      const [primaryPort, standbyPort] = [await freePort(), await freePort()];
      set.primary = new PostgresServer(set, 'primary', primaryPort, join(dir, 'primary'), { synchronous_standby_names: 'standby' });
      set.standby = new PostgresServer(set, 'standby', standbyPort, join(dir, 'standby'), {});
      await set.asPostgres('initdb', ['-D', set.primary.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '--no-instructions']);
      await set.primary.start();
      // The standby's copy: standby.signal and primary_conninfo (-R), the WAL it needs streamed alongside.
      await set.asPostgres('pg_basebackup', [
        ...['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', set.standby.dataDir],
        ...['-R', '-X', 'stream', '-c', 'fast', '--no-sync'],
      ]);
      await set.standby.start();
      // Until the standby streams as the synchronous one, a commit would wait for it.
      await set.untilSynchronous();
      return set;
    } catch (err) {
      await set.stop();
      throw err;
    }
  }

  private async untilSynchronous(): Promise<void> {
    const psql = () =>
      this.asPostgres('psql', [
        '-h',
        this.dir,
        '-p',
        String(this.primary.port),
        '-U',
        'postgres',
        '-At',
        '-c',
        'SELECT sync_state FROM pg_stat_replication',
      ]);
    await until('the standby to stream synchronously', async () => (await psql()).trim() === 'sync', 30_000);
  }

  async stop(): Promise<void> {
    for (const server of [this.primary, this.standby])
      await server?.stop().catch((err: unknown) => console.error(`[replica-set] stop ${server.name}:`, err));
    await rm(this.dir, { recursive: true, force: true });
  }
}
