import { createConnection, createServer, type Server } from 'node:net';
import { chmod, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The running embedded service's door for the operator's commands
 * (docs/operations.md#backup-and-restore). The embedded database lives inside
 * the service's process, which holds its DATA_DIR (data-dir.lock.ts), so
 * `dept-tenant backup` and `restore` cannot open it while the service runs;
 * they ask the service instead, through a Unix socket in DATA_DIR. Only who
 * may read and write the data directory may use it (the socket is mode 0600,
 * the directory the service's own), which is who could copy or replace the
 * data anyway: no port, no token, nothing on the network.
 *
 * One request per connection: a JSON line {command, file}, answered by a JSON
 * line {ok: true, ...summary} or {ok: false, error}. The service runs one
 * command at a time.
 */
const CONTROL_SOCKET = '.control.sock';
/** A Unix socket's path is at most 107 bytes on Linux. */
const MAX_PATH = 107;

export type ControlCommand = 'backup' | 'restore';
export type ControlAnswer = { ok: true; tables: number; rows: number; ms: number } | { ok: false; error: string };
export type ControlHandler = (command: ControlCommand, file: string) => Promise<{ tables: number; rows: number }>;

function controlSocketPath(dataDir: string): string | undefined {
  const path = join(dataDir, CONTROL_SOCKET);
  return Buffer.byteLength(path) <= MAX_PATH ? path : undefined;
}

/** Listens on DATA_DIR's control socket; the caller holds DATA_DIR's lock, so a socket file left there is stale. */
export async function listenControl(dataDir: string, handle: ControlHandler): Promise<Server | undefined> {
  const path = controlSocketPath(dataDir);
  if (path === undefined) return undefined;
  await rm(path, { force: true });
  let queue = Promise.resolve();
  const server = createServer((socket) => {
    let input = '';
    socket.setEncoding('utf8');
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: string) => {
      input += chunk;
      if (!input.includes('\n')) return;
      socket.removeAllListeners('data');
      const run = async (): Promise<ControlAnswer> => {
        const request = JSON.parse(input.slice(0, input.indexOf('\n'))) as { command?: unknown; file?: unknown };
        if ((request.command !== 'backup' && request.command !== 'restore') || typeof request.file !== 'string')
          return { ok: false, error: 'expected {"command":"backup"|"restore","file":"<absolute path>"}' };
        const started = performance.now();
        const summary = await handle(request.command, request.file);
        return { ok: true, ...summary, ms: Math.round(performance.now() - started) };
      };
      // One at a time: a backup never reads a restore's half-loaded data.
      queue = queue.then(async () => {
        const answer = await run().catch((err: unknown) => ({ ok: false as const, error: err instanceof Error ? err.message : String(err) }));
        socket.end(JSON.stringify(answer) + '\n');
      });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  await chmod(path, 0o600);
  server.unref();
  return server;
}

/**
 * Asks the service running on `dataDir`; undefined when none answers there
 * (no socket, or a socket nobody listens on: the command may then open the
 * directory itself).
 */
export function askService(dataDir: string, command: ControlCommand, file: string): Promise<ControlAnswer | undefined> {
  const path = controlSocketPath(dataDir);
  if (path === undefined) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    let output = '';
    const socket = createConnection(path, () => socket.write(JSON.stringify({ command, file }) + '\n'));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (output += chunk));
    socket.on('end', () => {
      try {
        resolve(JSON.parse(output) as ControlAnswer);
      } catch {
        reject(new Error(`the service answered its control socket with "${output}"`));
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') resolve(undefined);
      else reject(err);
    });
  });
}
