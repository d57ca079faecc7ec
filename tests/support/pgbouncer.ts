import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';

// A real PgBouncer for the tests of a start behind a pooler
// (docs/operations.md#behind-a-pooler): the settings of .ci/pgbouncer.sh
// (transaction mode, three server connections per database, a `*` entry, no
// ignore_startup_parameters), in a config written to a temporary directory,
// on a free loopback port, stopped by its PID.

/** The Debian package's binary, or PGBOUNCER. */
export const PGBOUNCER_BINARY = process.env.PGBOUNCER || '/usr/sbin/pgbouncer';
export const pgbouncerAvailable = existsSync(PGBOUNCER_BINARY);

/** Its version as [major, minor] (`pgbouncer --version`), or undefined without the binary. */
export function pgbouncerVersion(): [number, number] | undefined {
  if (!pgbouncerAvailable) return undefined;
  const match = /PgBouncer (\d+)\.(\d+)/.exec(execFileSync(PGBOUNCER_BINARY, ['--version'], { encoding: 'utf8' }));
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

export interface PgBouncer {
  port: number;
  pid: number;
  /** The URL of database `name` through it, as `user`. */
  url(name: string): string;
  /** Transactions it has passed on to the server for database `name` (SHOW STATS). */
  transactions(name: string): Promise<number>;
  /** Everything it logged (it logs to stderr). */
  output(): string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** Starts PgBouncer in front of the server at `serverUrl` (its host, port and user). */
export async function startPgBouncer(serverUrl: string): Promise<PgBouncer> {
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username) || 'postgres';
  // With auth_type trust the clients give no password, and PgBouncer logs in
  // to the server with the one its auth_file lists (the container's server
  // asks for one); a double quote is written twice in that file.
  const password = decodeURIComponent(server.password).replaceAll('"', '""');
  const dir = await mkdtemp(join(tmpdir(), 'pgbouncer-'));
  // PgBouncer refuses to run as root: it then runs as postgres, which must read the config.
  await chmod(dir, 0o755);
  const asRoot = process.getuid?.() === 0;
  await writeFile(join(dir, 'userlist.txt'), `"${user}" "${password}"\n`, { mode: 0o644 });
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    await writeFile(
      join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        `* = host=${server.hostname} port=${server.port || 5432}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${join(dir, 'userlist.txt')}`,
        `admin_users = ${user}`,
        'pool_mode = transaction',
        'default_pool_size = 3',
        'max_client_conn = 1000',
        'query_wait_timeout = 30',
        '',
      ].join('\n'),
      { mode: 0o644 },
    );
    const child: ChildProcess = spawn(PGBOUNCER_BINARY, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let running = true;
    void exited.then(() => (running = false));
    const until = Date.now() + 10_000;
    while (running && Date.now() < until && !(await answers(port))) await new Promise((r) => setTimeout(r, 50));
    if (!running || Date.now() >= until) {
      // The port was taken in the meantime (or it failed): stop it and try again.
      child.kill('SIGKILL');
      await exited;
      if (attempt === 4) throw new Error(`pgbouncer did not start:\n${output}`);
      continue;
    }
    const url = (name: string) => `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${name}`;
    return {
      port,
      pid: child.pid!,
      url,
      output: () => output,
      async transactions(name) {
        const admin = postgres(url('pgbouncer'), { max: 1, prepare: false, fetch_types: false, onnotice: () => {} });
        try {
          // The admin console answers only the simple query protocol.
          const rows = await admin.unsafe<{ database: string; total_xact_count: string }[]>('SHOW STATS').simple();
          return Number(rows.find((r) => r.database === name)?.total_xact_count ?? 0);
        } finally {
          await admin.end();
        }
      },
      async stop() {
        if (running) {
          process.kill(child.pid!, 'SIGTERM');
          await exited;
        }
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
  throw new Error('unreachable');
}
