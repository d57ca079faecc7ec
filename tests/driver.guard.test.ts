import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { DIST } from './support/build.js';

// src/db/driver.guard.ts with the real crashes: a child process provokes each
// one, once with the guard the service installs (the built dist/) and once
// without it. The postgres.js null-socket write (porsager/postgres#1154,
// tests/support/driver-crash.mjs) needs a PostgreSQL server to connect to;
// the session ended while postgres.js sets up a new connection
// (tests/support/startup-crash.mjs) has a fake server of its own.

const FIXTURE = join(import.meta.dirname, 'support', 'driver-crash.mjs');
const STARTUP_FIXTURE = join(import.meta.dirname, 'support', 'startup-crash.mjs');

async function runFixture(mode: 'guarded' | 'unguarded', args = [FIXTURE, inject('databaseUrl'), DIST, mode]) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

describe.skipIf(!inject('databaseUrl'))('the postgres.js null-socket crash', () => {
  it('ends a process without the guard, with the TypeError from nextWrite', async () => {
    const { code, stdout, stderr } = await runFixture('unguarded');
    expect(stdout).toContain('transaction: CONNECTION_CLOSED');
    expect(stdout).not.toContain('survived');
    expect(stderr).toContain("TypeError: Cannot read properties of null (reading 'write')");
    expect(stderr).toMatch(/at Immediate\.nextWrite .*[\\/]postgres[\\/]src[\\/]connection\.js/);
    expect(code).toBe(1);
  });

  it('is survived with the guard: the transaction fails, the next query runs, the pool ends, exit 0', async () => {
    const { code, stdout, stderr } = await runFixture('guarded');
    expect(stdout.trim().split('\n')).toEqual(['transaction: CONNECTION_CLOSED', 'survived: yes', 'next query: 2', 'pool: ended']);
    expect(stderr).toContain('postgres.js wrote to a connection that had just closed (porsager/postgres#1154)');
    expect(stderr).not.toContain('TypeError');
    expect(code).toBe(0);
  });
});

describe('a session ended while postgres.js sets up a new connection', () => {
  // Its array-type fetch fails (a fast shutdown's FATAL, a socket error here)
  // and nothing awaits it: an unhandled rejection.
  it('ends a process without the guard, with the unhandled SessionEnded', async () => {
    const { code, stdout, stderr } = await runFixture('unguarded', [STARTUP_FIXTURE, DIST, 'unguarded']);
    expect(stdout).toContain('first query: 57P01');
    expect(stdout).not.toContain('survived');
    expect(stderr).toContain('SessionEnded: The database ended the session');
    expect(code).toBe(1);
  });

  it('is survived with the guard: the waiting query fails, the next one runs on a fresh session, the pool ends, exit 0', async () => {
    const { code, stdout, stderr } = await runFixture('guarded', [STARTUP_FIXTURE, DIST, 'guarded']);
    expect(stdout.trim().split('\n')).toEqual(['first query: 57P01', 'survived: yes', 'next query: 2', 'pool: ended']);
    expect(stderr).toContain('postgres.js could not set up a new connection');
    expect(stderr).not.toContain('SessionEnded:');
    expect(code).toBe(0);
  });
});
