import { describe, expect, it } from 'vitest';
import { coalesced } from '../src/core/coalesced.js';

// src/core/coalesced.ts: the feed's readers wait for a sequencer run that
// began after they asked (so they see every record committed before), and
// readers that ask together share it. Through HTTP the first half is in
// tests/audit.test.ts (a write's record is listed by the next request).

/** A task whose runs the test ends one at a time: `started` counts runs begun, `finish()` ends the oldest. */
function controlled() {
  const ends: (() => void)[] = [];
  let started = 0;
  let failNext: Error | undefined;
  const task = () => {
    started++;
    const failing = failNext;
    failNext = undefined;
    return new Promise<void>((resolve, reject) => ends.push(() => (failing ? reject(failing) : resolve())));
  };
  const errors: unknown[] = [];
  const runs = coalesced(task, (err) => errors.push(err));
  const settle = () => new Promise((r) => setImmediate(r));
  return {
    runs,
    errors,
    started: () => started,
    failNext: (err: Error) => (failNext = err),
    async finish() {
      ends.shift()!();
      await settle();
    },
    settle,
  };
}

describe('coalesced whenRun', () => {
  it('waits for a run that began after the ask, not the one already going', async () => {
    const c = controlled();
    c.runs.run();
    await c.settle();
    expect(c.started()).toBe(1);
    let done = false;
    const waited = c.runs.whenRun().then(() => (done = true));
    await c.finish(); // the run that was going when it asked
    expect(done).toBe(false);
    expect(c.started()).toBe(2);
    await c.finish();
    await waited;
    expect(done).toBe(true);
  });

  it('asks made during one run share the next: three readers, two runs', async () => {
    const c = controlled();
    const first = c.runs.whenRun();
    await c.settle();
    const later = [c.runs.whenRun(), c.runs.whenRun(), c.runs.whenRun()];
    await c.finish();
    await first;
    await c.finish();
    await Promise.all(later);
    expect(c.started()).toBe(2);
  });

  it('a failed run rejects its waiters with its error and is reported; the next ask runs again', async () => {
    const c = controlled();
    c.failNext(new Error('database away'));
    const failed = c.runs.whenRun().catch((err: unknown) => err);
    await c.settle();
    await c.finish();
    expect(await failed).toMatchObject({ message: 'database away' });
    expect(c.errors).toHaveLength(1);
    const next = c.runs.whenRun();
    await c.settle();
    await c.finish();
    await expect(next).resolves.toBeUndefined();
    expect(c.started()).toBe(2);
  });

  it('after stop, an ask settles without a run, and one waiting when it stopped is let go', async () => {
    const c = controlled();
    c.runs.run();
    await c.settle();
    const waiting = c.runs.whenRun();
    const stopped = c.runs.stop();
    await c.finish();
    await stopped;
    await expect(waiting).resolves.toBeUndefined();
    await expect(c.runs.whenRun()).resolves.toBeUndefined();
    expect(c.started()).toBe(1);
  });
});
