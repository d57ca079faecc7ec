// Child processes of a bench run (the built service, the bare-stack
// baseline, a webhook receiver): started on loopback ports, waited for, and
// stopped by their PID, also when the run is interrupted.

import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

const ROOT = new URL('../..', import.meta.url).pathname;

export interface Child {
  name: string;
  proc: ChildProcess;
  port: number;
  log: string[];
}

const children: Child[] = [];
/** Servers of this process (the OTLP receiver) that stopAll closes with the children. */
const closers: Array<() => void> = [];
/** Run after the children are stopped when the bench is interrupted: drops what the run made (a database, a data directory). */
const cleanups: Array<() => Promise<void>> = [];

export function closeWithChildren(close: () => void): void {
  closers.push(close);
}

export function cleanupOnInterrupt(cleanup: () => Promise<void>): void {
  cleanups.push(cleanup);
}

/** `command` (this process's Node unless given) with `args` in the repository's root, told its PORT and HOST; stderr kept for errors. */
export function start(name: string, args: string[], port: number, env: Record<string, string>, command = process.execPath): Child {
  const proc = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const child: Child = { name, proc, port, log: [] };
  proc.stderr!.on('data', (d: Buffer) => child.log.push(d.toString()));
  children.push(child);
  return child;
}

/**
 * The built service as npm start and the image start it (scripts/start.sh, which
 * execs node: the PID stays the service's), on this process's Node.
 */
export function startService(name: string, nodeArgs: string[], port: number, env: Record<string, string>): Child {
  return start(name, ['scripts/start.sh', ...nodeArgs], port, { ...env, NODE: process.execPath }, 'sh');
}

export async function waitReady(child: Child, path: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null) throw new Error(`${child.name} exited ${child.proc.exitCode}: ${child.log.join('')}`);
    try {
      await fetch(`http://127.0.0.1:${child.port}${path}`);
      // Answered, and by this child: it would have exited on EADDRINUSE.
      await new Promise((r) => setTimeout(r, 200));
      if (child.proc.exitCode === null) return;
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`${child.name} did not answer within 90 s`);
}

/** Stops every child by its PID: SIGTERM, then SIGKILL after 5 s; and closes the servers handed to closeWithChildren. */
export async function stopAll(): Promise<void> {
  for (const close of closers.splice(0)) close();
  await Promise.all(
    children.splice(0).map(async ({ proc }) => {
      if (proc.exitCode !== null || proc.pid === undefined) return;
      const exited = new Promise((r) => proc.once('exit', r));
      process.kill(proc.pid, 'SIGTERM');
      const timer = setTimeout(() => proc.pid !== undefined && proc.exitCode === null && process.kill(proc.pid, 'SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer().once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A free loopback port of the system's choosing. */
export function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** `npm run build`: the service the process benches run is dist/, built from this checkout. */
export async function buildService(): Promise<void> {
  const build = spawn('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  const code = await new Promise((r) => build.once('exit', r));
  if (code !== 0) throw new Error(`npm run build failed (${code})`);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    const run = async () => {
      await stopAll();
      for (const cleanup of cleanups.splice(0)) await cleanup();
    };
    void run().finally(() => process.exit(130));
  });
}
