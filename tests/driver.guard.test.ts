import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { DIST } from './support/build.js';

// src/db/driver.guard.ts with the real crash: a child process provokes the
// postgres.js null-socket write (porsager/postgres#1154) through
// tests/support/driver-crash.mjs, once with the guard the service installs
// (the built dist/) and once without it. PostgreSQL only: the fixture needs
// a server to connect to.

const FIXTURE = join(import.meta.dirname, 'support', 'driver-crash.mjs');

async function runFixture(mode: 'guarded' | 'unguarded') {
  const child = spawn(process.execPath, [FIXTURE, inject('databaseUrl'), DIST, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
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
