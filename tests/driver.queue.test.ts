import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// postgres.js's pool queue as patches/postgres+3.4.9.patch leaves it (the
// queue-scan change, applied at install): still first in, first out, through
// a queue that is shifted without ever emptying (docs/architecture.md, the
// patched driver; tests/driver.patch.test.ts shows the scan it removes).
// Loaded by file: the package does not export it.
const path = new URL('../node_modules/postgres/src/queue.js', import.meta.url);
type Queue<T> = { length: number; push(x: T): T; shift(): T; remove(x: T): T | null };
const { default: makeQueue } = (await import(path.href)) as { default: <T>(initial?: T[]) => Queue<T> };

describe("postgres.js's pool queue", () => {
  it('is the fixed one', () => {
    expect(readFileSync(path, 'utf8')).toContain('xs.indexOf(x, index)');
    expect(readFileSync(new URL('../node_modules/postgres/cjs/src/queue.js', import.meta.url), 'utf8')).toContain('xs.indexOf(x, index)');
  });

  it('keeps first-in first-out order and removes any live element, through 200,000 shifts that never empty it', () => {
    const q = makeQueue<number>();
    q.push(-1);
    let outOfOrder = 0;
    for (let i = 0; i < 200_000; i++) {
      q.push(i);
      if (q.shift() !== i - 1) outOfOrder++;
    }
    expect(outOfOrder).toBe(0);
    expect(q.length).toBe(1);
    q.push(7);
    q.push(8);
    expect(q.remove(199_999)).toBe(199_999);
    expect(q.remove(123)).toBeNull();
    expect(q.length).toBe(2);
    expect(q.shift()).toBe(7);
    expect(q.shift()).toBe(8);
    expect(q.length).toBe(0);
  });
});
