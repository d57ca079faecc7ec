import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { DataDirBusyError, lockDataDir } from '../src/db/data-dir.lock.js';
import { call, loginAt, run, startService, type Run, type Service } from './support/service.js';

// docs/operations.md: a DATA_DIR has one owner. A second process refuses to
// start, naming the directory and the holder; two started together never
// both win; a lock left by kill -9 never blocks the next start. Embedded
// mode only, so these run in the suite's PGlite run and are skipped when the
// suite runs on PostgreSQL (they would test the same thing twice).

const dirs: string[] = [];
const processes: Run[] = [];
afterAll(async () => {
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.exited));
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function newDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ops-owner-'));
  dirs.push(dir);
  return dir;
}

const PASSWORD = 'owner-test-pw-1';

describe.skipIf(inject('databaseUrl'))('the data directory lock', () => {
  it('admits exactly one of two lockers racing, again and again, and frees on release', async () => {
    const dir = await newDir();
    for (let round = 0; round < 10; round++) {
      const results = await Promise.allSettled([lockDataDir(dir), lockDataDir(dir)]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r) => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(DataDirBusyError);
      expect(String((lost[0] as PromiseRejectedResult).reason.message)).toContain(resolve(dir));
      await (won[0] as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release();
    }
  });
});

describe.skipIf(inject('databaseUrl'))('services on one DATA_DIR', () => {
  let dir: string;
  let owner: Service;

  it('two started at the same moment: one serves, the other exits non-zero naming the directory and the holder', async () => {
    dir = await newDir();
    const env = { DATA_DIR: dir, ADMIN_PASSWORD: PASSWORD };
    const starts = [startService(env), startService(env)];
    // startService rejects when its process exits before listening.
    const settled = await Promise.allSettled(starts);
    const serving = settled.filter((s): s is PromiseFulfilledResult<Service> => s.status === 'fulfilled').map((s) => s.value);
    const refused = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected').map((s) => String(s.reason.message));
    processes.push(...serving);
    expect(serving).toHaveLength(1);
    expect(refused).toHaveLength(1);
    owner = serving[0]!;
    expect(refused[0]).toContain(`DATA_DIR ${resolve(dir)} is in use by process ${owner.pid}`);
    expect((await call(owner.base, 'GET', '/readyz')).status).toBe(200);
  });

  it('a later second process is refused within seconds while the owner keeps serving', async () => {
    const started = performance.now();
    const second = run('main', { DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1' });
    processes.push(second);
    const exit = await second.exited;
    expect(exit.code).toBe(73);
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(second.output()).toContain(`DATA_DIR ${resolve(dir)} is in use by process ${owner.pid}`);
    expect((await call(owner.base, 'GET', '/readyz')).status).toBe(200);
  });

  it('after kill -9 of the owner the next start takes the directory, data intact', async () => {
    const token = await loginAt(owner.base, '000000', 'admin', PASSWORD);
    const created = await call(owner.base, 'POST', '/system/dept-api', { parentId: 0, deptName: 'Before the kill' }, token);
    expect(created.status).toBe(200);
    owner.child.kill('SIGKILL');
    expect((await owner.exited).signal).toBe('SIGKILL');

    const next = await startService({ DATA_DIR: dir, ADMIN_PASSWORD: PASSWORD });
    processes.push(next);
    const again = await loginAt(next.base, '000000', 'admin', PASSWORD);
    const list = await call(next.base, 'GET', '/system/dept-api/list?deptName=Before', undefined, again);
    expect(list.body.data.map((d: { deptName: string }) => d.deptName)).toEqual(['Before the kill']);
    expect(await next.stop()).toEqual({ code: 0, signal: null });
  });
});
