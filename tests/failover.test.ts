import { afterAll, describe, expect, inject, it } from 'vitest';
import { openPostgres, type Database } from '../src/db/database.js';
import { expectTreeInvariants } from './support/invariants.js';
import { freePort, postgresBinaries, ReplicaSet } from './support/replica-set.js';
import { call, loginAt, startService, type Service } from './support/service.js';

// docs/operations.md#failover with real servers: a primary and a synchronous
// streaming standby of our own (tests/support/replica-set.ts), and the
// service as a real process whose DATABASE_URL lists both hosts. It starts
// whichever host is listed first; under a steady stream of creates the
// primary is killed with SIGKILL (or, a planned switchover, shut down) and the
// standby promoted: the same process writes again within 10 s of the
// promotion, answering nothing but 200 and 503 meanwhile (reads too), and
// every create answered 200 is on the new primary
// (docs/operations.md#retries). It then still shuts down cleanly on SIGTERM.
// The time from the promotion to the first acknowledged write is printed,
// not asserted beyond the 10 s.
// Needs the PostgreSQL server binaries (initdb, pg_basebackup, pg_ctl); runs
// with the suite's PostgreSQL runs.

const PASSWORD = 'failover-pw-1';
const CLIENTS = 4;
const TEN_SECONDS = 10_000;
const bin = postgresBinaries();

const urlOf = (...ports: number[]) =>
  `postgres://postgres@${ports.map((port) => `127.0.0.1:${port}`).join(',')}/postgres?target_session_attrs=read-write`;

interface Answer {
  kind: 'create' | 'read';
  name: string;
  status: number | 'no answer';
  sentAt: number;
  answeredAt: number;
  msg?: string;
}

describe.skipIf(!bin || !inject('databaseUrl'))('failover to a promoted standby', () => {
  const sets: ReplicaSet[] = [];
  const opened: Database[] = [];
  afterAll(async () => {
    for (const db of opened) await db.close();
    for (const set of sets) await set.stop();
  });
  async function replicaSet(): Promise<ReplicaSet> {
    const set = await ReplicaSet.start(bin!);
    sets.push(set);
    return set;
  }

  async function stopCleanly(service: Service) {
    const exit = await service.stop();
    const output = service.output();
    expect(output, 'the service crashed on its way out').not.toContain('TypeError');
    expect(exit, output.slice(-2000)).toEqual({ code: 0, signal: null });
    return output;
  }

  it('starts when a dead port and the standby are listed before the primary', async () => {
    const set = await replicaSet();
    const dead = await freePort();
    const service = await startService({ DATABASE_URL: urlOf(dead, set.standby.port, set.primary.port), ADMIN_PASSWORD: PASSWORD });
    try {
      const token = await loginAt(service.base, '000000', 'admin', PASSWORD);
      expect((await call(service.base, 'POST', '/system/dept-api', { parentId: 0, deptName: 'Primary listed third' }, token)).status).toBe(200);
    } finally {
      await stopCleanly(service);
    }
  });

  /**
   * Runs CLIENTS creating departments and one reader against a service on
   * `set`, calls `lose` (which ends the primary) and then promotes the
   * standby; checks and prints what the clients saw.
   */
  async function failover(set: ReplicaSet, label: string, lose: () => Promise<void>) {
    const service = await startService({ DATABASE_URL: urlOf(set.primary.port, set.standby.port), ADMIN_PASSWORD: PASSWORD });
    const answers: Answer[] = [];
    let stopping = false;
    let stopped = false;
    try {
      const token = await loginAt(service.base, '000000', 'admin', PASSWORD);
      const client = async (c: number, kind: Answer['kind']) => {
        for (let i = 0; !stopping; i++) {
          const name = `fo c${c} n${i}`;
          const sentAt = performance.now();
          try {
            const res =
              kind === 'create'
                ? await call(service.base, 'POST', '/system/dept-api', { parentId: 0, deptName: name }, token)
                : await call(service.base, 'GET', '/system/dept-api/list?deptName=fo%20c0%20n1', undefined, token);
            answers.push({ kind, name, status: res.status, sentAt, answeredAt: performance.now(), msg: res.body.msg });
          } catch {
            answers.push({ kind, name, status: 'no answer', sentAt, answeredAt: performance.now() });
          }
        }
      };
      const load = Promise.all([...Array.from({ length: CLIENTS }, (_, c) => client(c, 'create')), client(CLIENTS, 'read')]);
      const created = () => answers.filter((a) => a.kind === 'create' && a.status === 200);
      const createdAfter = (at: number) => created().find((a) => a.sentAt >= at);

      await expect.poll(() => created().length, { timeout: 10_000, interval: 20 }).toBeGreaterThan(20);
      const lostAt = performance.now();
      await lose();
      // A failover manager needs a moment to decide the primary is gone.
      await new Promise((r) => setTimeout(r, 500));
      const promotedAt = performance.now();
      await set.standby.promote();
      const promotionDone = performance.now();
      try {
        await expect.poll(() => createdAfter(promotedAt), { timeout: 15_000, interval: 20 }).toBeDefined();
      } catch (err) {
        // What the clients and the service saw, for a run that never wrote again.
        const since = answers.filter((a) => a.sentAt >= lostAt);
        console.log(`[failover] ${label}: no create acknowledged after the promotion; answers since the loss:`, JSON.stringify(since.slice(-20)));
        console.log(`[failover] ${label}: service output:\n${service.output().slice(-4000)}`);
        throw err;
      }
      const first = createdAfter(promotedAt)!;
      // The pool keeps writing once it has found the new primary.
      await new Promise((r) => setTimeout(r, 1_000));
      stopping = true;
      await load;

      const unavailable = answers.filter((a) => a.status === 503);
      console.log(
        `[failover] ${label}: promotion took ${Math.round(promotionDone - promotedAt)} ms; first create acknowledged ` +
          `${Math.round(first.answeredAt - promotedAt)} ms after the promotion began (${Math.round(first.answeredAt - lostAt)} ms after the primary was lost); ` +
          `${answers.filter((a) => a.kind === 'create').length} creates (${created().length} answered 200), ` +
          `${answers.filter((a) => a.kind === 'read').length} reads, ${unavailable.length} answered 503`,
      );
      // The first few 503s, when and how fast they came; the rest only counted.
      for (const a of unavailable.slice(0, 5)) {
        console.log(
          `[failover]   503 to a ${a.kind} sent ${Math.round(a.sentAt - lostAt)} ms after the loss, in ${Math.round(a.answeredAt - a.sentAt)} ms: ${a.msg}`,
        );
      }
      expect(
        answers.filter((a) => a.status !== 200 && a.status !== 503),
        'answers other than 200 and 503',
      ).toEqual([]);
      expect(first.answeredAt - promotedAt).toBeLessThan(TEN_SECONDS);

      // Every acknowledged create is on the new primary, once.
      const newPrimary = openPostgres(set.standby.url, { max: 1 });
      opened.push(newPrimary);
      const names = created().map((a) => a.name);
      const found = await newPrimary.sql<{ name: string }[]>`SELECT dept_name AS name FROM sys_dept WHERE dept_name = ANY(${names})`;
      expect(new Set(found.map((r) => r.name))).toEqual(new Set(names));
      expect(found.length, 'a create answered 200 was stored twice').toBe(names.length);
      await expectTreeInvariants(newPrimary.sql);

      stopped = true;
      const output = await stopCleanly(service);
      // A standby refuses writes (25006): the pool must never have settled on one.
      expect(output, 'a write was sent to a standby').not.toContain('"code":"25006"');
    } finally {
      stopping = true;
      if (!stopped) await service.stop();
    }
  }

  it('writes again within 10 s of promoting the standby after kill -9 of the primary, losing no acknowledged write', async () => {
    const set = await replicaSet();
    await failover(set, 'kill -9', async () => set.primary.kill());
  });

  it('a switchover (the primary shut down, then the standby promoted) likewise', async () => {
    const set = await replicaSet();
    await failover(set, 'switchover', () => set.primary.shutDown());
  });
});
