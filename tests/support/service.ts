import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { inject } from 'vitest';
import { DIST, ROOT } from './build.js';
import { databaseRoute } from './fresh-postgres.js';
import { createCitusDatabase, dropCitusDatabase } from './citus-cluster.js';
import { citusNodesOfRun } from './test-database.js';

// Real processes for the operation tests : the service started with
// `node dist/main.js` (built from src/ by the global setup at the start of
// every run, tests/support/build.ts) on a database of its own, talked to over
// loopback HTTP, stopped by its PID.

/** Variables of the parent's environment that must not leak into a spawned service. */
const OURS = [
  'DATABASE_URL',
  'DATABASE_DIRECT_URL',
  'DB_PREPARE',
  'DATA_DIR',
  'ADMIN_PASSWORD',
  'JWT_SECRET',
  'PORT',
  'HOST',
  'LOG_LEVEL',
  'TOKEN_TTL',
  'DB_START_TIMEOUT',
  'SHUTDOWN_TIMEOUT',
  'NEW_PASSWORD',
  'MANAGEMENT_PORT',
  'MANAGEMENT_HOST',
];

export interface ServiceDatabase {
  kind: 'postgresql' | 'embedded';
  /** DATABASE_URL (with DATABASE_DIRECT_URL and DB_PREPARE under TEST_POOLER_URL) or DATA_DIR for the spawned process. */
  env: Record<string, string>;
  /** PostgreSQL: the database on the server itself, for a test that opens it or puts a proxy in front of it. */
  directUrl?: string;
  dispose(): Promise<void>;
}

/**
 * A new, empty PostgreSQL database on the test server (by URL), or when the
 * suite runs on PGlite a DATA_DIR holding an empty database: a copy of the
 * cluster the global setup initialised once (initdb is most of a first start
 * on PGlite). Either way the service migrates and bootstraps it itself. Tests
 * of a first start in an empty directory make their own directory instead.
 */
export async function serviceDatabase(): Promise<ServiceDatabase> {
  const serverUrl = inject('databaseUrl');
  if (!serverUrl) {
    const dir = await mkdtemp(join(tmpdir(), 'ops-data-'));
    await cp(inject('emptyClusterDir'), dir, { recursive: true });
    return { kind: 'embedded', env: { DATA_DIR: dir }, dispose: () => rm(dir, { recursive: true, force: true }) };
  }
  // The name is ours (prefix + hex), never input.
  const name = `svc_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  // On Citus: an empty database with the extension on every node; the service's start places the tables.
  const nodes = citusNodesOfRun();
  if (nodes) await createCitusDatabase(nodes, name);
  else await admin.unsafe(`CREATE DATABASE ${name}`);
  const route = databaseRoute(serverUrl, name, inject('poolerUrl') || undefined);
  return {
    kind: 'postgresql',
    // Configured as a deployment behind a transaction pooler is (docs/operations.md#behind-a-pooler).
    env: {
      DATABASE_URL: route.url,
      ...(route.directUrl ? { DATABASE_DIRECT_URL: route.directUrl, DB_PREPARE: String(route.prepare) } : {}),
    },
    directUrl: route.directUrl ?? route.url,
    async dispose() {
      // FORCE also ends the pooler's server connections to it.
      if (nodes) await dropCitusDatabase(nodes, name);
      else await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Run {
  child: ChildProcess;
  output(): string;
  exited: Promise<Exit>;
}

/** The built entry points: the service, or a command of the `dept-tenant` bin (src/cli/). */
export type Entry = 'main' | 'reset-password' | 'import-ruoyi' | 'backup' | 'restore' | 'migrate';

/** Spawns `node dist/main.js [args]` or `node dist/cli/cli.main.js <command> [args]` with only the given service variables. */
export function run(entry: Entry, env: Record<string, string>, args: string[] = []): Run {
  const clean = { ...process.env };
  for (const name of OURS) delete clean[name];
  // Tracing is on only where a test turns it on (docs/operations.md#traces).
  for (const name of Object.keys(clean)) if (name.startsWith('OTEL_')) delete clean[name];
  const script = entry === 'main' ? [join(DIST, 'main.js')] : [join(DIST, 'cli', 'cli.main.js'), entry];
  const child = spawn(process.execPath, [...script, ...args], {
    cwd: ROOT,
    env: { ...clean, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => output, exited };
}

export interface Service extends Run {
  base: string;
  pid: number;
  /** SIGTERM, then the exit. */
  stop(): Promise<Exit>;
}

/** Starts the service on port 0 and resolves once it listens (the port comes from its log). */
export async function startService(env: Record<string, string>, timeoutMs = 120_000): Promise<Service> {
  const r = run('main', { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      r.child.kill('SIGKILL');
      reject(new Error(`service did not start within ${timeoutMs} ms:\n${r.output()}`));
    }, timeoutMs);
    const look = () => {
      const match = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(r.output());
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    r.child.stdout!.on('data', look);
    void r.exited.then((exit) => {
      clearTimeout(timer);
      reject(new Error(`service exited (${exit.code ?? exit.signal}) before listening:\n${r.output()}`));
    });
  });
  return {
    ...r,
    base: `http://127.0.0.1:${port}`,
    pid: r.child.pid!,
    async stop() {
      r.child.kill('SIGTERM');
      return r.exited;
    },
  };
}

/** One HTTP call to a spawned service: status and parsed envelope. */
export async function call(base: string, method: string, path: string, body?: unknown, token?: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...headers,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as { code: number; msg: string; data: any }, headers: res.headers };
}

export async function loginAt(base: string, tenantId: string, username: string, password: string): Promise<string> {
  const res = await call(base, 'POST', '/auth/login', { tenantId, username, password });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.access_token as string;
}

/**
 * A loopback port nothing listens on right now, for a process that must be
 * given a port number (0 turns the management listener off). Another process
 * could take it in between; on loopback in a test run that does not happen.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
