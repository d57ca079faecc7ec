import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { INSTALLED, readPatch, ROOT, variant, type Hunk } from './support/driver/variants.js';
import { pgbouncerAvailable, pgbouncerVersion, startPgBouncer, type PgBouncer } from './support/pgbouncer.js';

// postgres.js is pinned to 3.4.9 and patched at install (patches/, applied by
// patch-package in npm's postinstall; docs/architecture.md#choices-we-made).
// Each change of the patch has a scenario here that provokes the fault it is
// for, in a child process (tests/support/driver/scenarios.mjs): run on the
// installed driver it must behave, and run on a copy with that one change
// taken out again it must fail the way 3.4.9 does, which shows the scenario
// tests that change. The faults that need a real server to happen (a socket
// closed under a statement, a session terminated) run where the suite has a
// PostgreSQL server; the others answer from a fake server on loopback.

const SCENARIOS = join(import.meta.dirname, 'support', 'driver', 'scenarios.mjs');
const serverUrl = inject('databaseUrl');

interface Run {
  code: number | null;
  lines: string[];
  stderr: string;
}

async function run(scenario: string, packageDir: string, url = serverUrl): Promise<Run> {
  const child = spawn(process.execPath, [SCENARIOS, scenario, packageDir, url], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return { code, lines: stdout.trim().split('\n'), stderr };
}

/** The healthy run: exactly these lines, exit 0. */
function behaves(result: Run, lines: string[]): void {
  expect(result.lines, result.stderr).toEqual(lines);
  expect(result.code).toBe(0);
}

/** The process ended early, as 3.4.9 ends it: exit 1 with `error` on stderr, before `survived`. */
function crashed(result: Run, error: string | RegExp): void {
  expect(result.code).toBe(1);
  expect(result.lines).not.toContain('survived: yes');
  expect(result.stderr).toMatch(error);
}

const NULL_SOCKET_WRITE = /TypeError: Cannot read properties of null \(reading 'write'\)\s+at Immediate\.nextWrite .*[\\/]src[\\/]connection\.js/;

/** Per change: its scenario, whether it needs the PostgreSQL server (and a PgBouncer in front of it: `pooler`), the healthy lines, and how it fails without the change. */
const CHANGES: Record<string, { scenario: string; server: boolean; pooler?: boolean; lines: string[]; without: (result: Run) => void }> = {
  'write-after-close': {
    scenario: 'reserved-after-close',
    server: true,
    lines: ['reserved statement: CONNECTION_CLOSED', 'survived: yes', 'next query: 2', 'pool: ended'],
    without: (result) => crashed(result, NULL_SOCKET_WRITE),
  },
  'transaction-after-close': {
    scenario: 'late-statement',
    server: true,
    lines: ['transaction: CONNECTION_CLOSED', 'next query: 2', 'late statement: CONNECTION_CLOSED', 'pool: ended'],
    without: (result) => expect(result.lines).toContain('late statement: ran outside the transaction'),
  },
  'stale-write-timer': {
    scenario: 'pending-write-at-close',
    server: true,
    lines: ['statement at the close: CONNECTION_CLOSED', 'next query: 2', 'pool: ended'],
    without: (result) => expect(result.lines).toContain('next query: CONNECT_TIMEOUT'),
  },
  'session-leftovers': {
    scenario: 'terminated-statement',
    server: true,
    lines: ['terminated statement: 57P01', 'next query: [{"one":1,"two":2}]', 'pool: ended'],
    without: (result) => expect(result.lines).toContain('next query: 57P01'),
  },
  'type-fetch-rejection': {
    scenario: 'types-error',
    server: false,
    lines: ['first query: 57014', 'survived: yes', 'next query: 2', 'pool: ended'],
    without: (result) => crashed(result, /canceling statement due to statement timeout/),
  },
  'state-fetch-rejection': {
    scenario: 'state-error',
    server: false,
    lines: ['first query: 57014', 'survived: yes', 'next query: 2', 'pool: ended'],
    without: (result) => crashed(result, /canceling statement due to statement timeout/),
  },
  'unnamed-types': {
    scenario: 'unnamed-repeat',
    server: true,
    lines: ['writes per run: 1', 'same rows: yes', 'after the type change: "1"', 'pool: ended'],
    without: (result) => expect(result.lines).toContain('writes per run: 2'),
  },
  'unnamed-pipeline': {
    scenario: 'pipelined-behind-unnamed',
    server: true,
    pooler: true,
    lines: ['first: answered', 'behind it: answered (0 rows)', 'pool: ended'],
    without: (result) => expect(result.lines).toContain('behind it: no answer in 3 s'),
  },
  'query-hook': {
    scenario: 'query-hook',
    server: true,
    lines: [
      'answers: 2, 22012',
      'reported: outer executed, outer answered, twice executed, twice answered, division executed, division failed 22012, in a transaction executed, in a transaction answered',
      'pool: ended',
    ],
    without: (result) => expect(result.lines).toContain('reported: nothing'),
  },
  'queue-scan': {
    scenario: 'queue-scan',
    server: false,
    lines: ['removed: yes', 'slots searched: at most 64'],
    without: (result) => expect(Number(result.lines[1]!.split(': ')[1])).toBeGreaterThan(10_000),
  },
};

let hunks: Hunk[];
let dir: string;
const variants = new Map<string, Promise<string>>();
/** The installed package without `change` ('all': postgres.js 3.4.9 as published), built once. */
const without = (change: string) => {
  if (!variants.has(change))
    variants.set(
      change,
      variant(join(dir, change), hunks, (hunk) => change === 'all' || hunk.change === change),
    );
  return variants.get(change)!;
};

beforeAll(async () => {
  hunks = await readPatch();
  dir = await mkdtemp(join(tmpdir(), 'driver-patch-'));
});
afterAll(async () => {
  await Promise.all(variants.values()).catch(() => {});
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the postgres.js patch', () => {
  it('is for the pinned version, installed, and names its upstream reference in every change', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.dependencies.postgres).toBe('3.4.9');
    expect(pkg.scripts.postinstall).toMatch(/^patch-package\b.*--error-on-fail/);
    expect(JSON.parse(await readFile(join(INSTALLED, 'package.json'), 'utf8')).version).toBe('3.4.9');
    const changes = new Set(hunks.map((hunk) => hunk.change));
    expect([...changes].sort()).toEqual(Object.keys(CHANGES).sort());
    for (const change of changes) {
      const references = hunks.filter((hunk) => hunk.change === change && hunk.upstream).map((hunk) => hunk.upstream!);
      expect(references.length, change).toBeGreaterThan(0);
      for (const reference of references) expect(reference, change).toMatch(/porsager\/postgres#\d+|not reported upstream/);
      // The ESM and the CommonJS builds carry the same change.
      const files = new Set(hunks.filter((hunk) => hunk.change === change).map((hunk) => hunk.file.replace(/^cjs\//, '')));
      for (const file of files)
        expect(
          hunks.some((hunk) => hunk.change === change && hunk.file === `cjs/${file}`),
          `${change} in cjs/${file}`,
        ).toBe(true);
    }
    // What npm installed is the patched text.
    for (const hunk of hunks) expect(await readFile(join(INSTALLED, hunk.file), 'utf8')).toContain(hunk.patched);
  });

  for (const [change, { scenario, server, pooler, lines, without: fails }] of Object.entries(CHANGES)) {
    describe.skipIf((server && !serverUrl) || (pooler && !pgbouncerAvailable))(`${change} (${scenario})`, () => {
      // A real PgBouncer in transaction mode in front of the server (tests/support/pgbouncer.ts).
      let bouncer: PgBouncer | undefined;
      const url = () => (bouncer ? bouncer.url(new URL(serverUrl).pathname.slice(1)) : serverUrl);
      beforeAll(async () => {
        if (pooler) bouncer = await startPgBouncer(serverUrl);
      });
      afterAll(async () => bouncer?.stop());
      it('the patched driver behaves', async () => {
        behaves(await run(scenario, INSTALLED, url()), lines);
      });
      // The pooler's side of the fault is PgBouncer's before 1.21, which released a server at a
      // ReadyForQuery with a Describe still unanswered; 1.21 tracks each request (Debian 12 has 1.18).
      const [major = 0, minor = 0] = (pooler && pgbouncerVersion()) || [];
      it.skipIf(pooler && (major > 1 || minor >= 21))('without this change the fault is back', async () => {
        fails(await run(scenario, await without(change), url()));
      });
    });
  }
});

describe.skipIf(!serverUrl)("a transaction's connection closed under it (sql.begin then answers with a ROLLBACK)", () => {
  it('ends a process on postgres.js 3.4.9 as published, with the TypeError from nextWrite', async () => {
    const result = await run('rollback-after-close', await without('all'));
    expect(result.lines).toContain('transaction: CONNECTION_CLOSED');
    crashed(result, NULL_SOCKET_WRITE);
  });

  it('is survived with the patch: the transaction fails, the next query runs, the pool ends, exit 0', async () => {
    behaves(await run('rollback-after-close', INSTALLED), ['transaction: CONNECTION_CLOSED', 'survived: yes', 'next query: 2', 'pool: ended']);
  });
});

describe('a session ended while postgres.js sets up a new connection (its array-type fetch meets a FATAL)', () => {
  it('ends a process on postgres.js 3.4.9 as published, with the unhandled rejection', async () => {
    const result = await run('startup-fatal', await without('all'));
    expect(result.lines).toContain('first query: 57P01');
    crashed(result, /terminating connection due to administrator command/);
  });

  it('is survived with the patch: the waiting query fails, the next one runs on a fresh session, the pool ends, exit 0', async () => {
    behaves(await run('startup-fatal', INSTALLED), ['first query: 57P01', 'survived: yes', 'next query: 2', 'pool: ended']);
  });
});
