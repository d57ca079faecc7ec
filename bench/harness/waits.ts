// What the database's backends are doing while a side's requests run:
// pg_stat_activity sampled every 50 ms from a connection of its own, the
// client backends of the bench's database counted by state and wait event.
// Lock waits, the WAL flush and the round trips back to the service each
// show as their own wait; "CPU" is an active backend waiting on nothing.

import postgres from 'postgres';
import { fmt } from './stats.js';

interface Tally {
  samples: number;
  counts: Map<string, number>;
  /** The database's transactions (committed and rolled back) while the side ran, and for how long. */
  transactions: number;
  seconds: number;
}

export interface WaitSampler {
  /** Samples while `work` runs, adding them to `side`'s tally. */
  during<T>(side: string, work: () => Promise<T>): Promise<T>;
  /** Per side: backends in a transaction or a statement on average, and what they waited on. */
  report(): string[];
  close(): Promise<void>;
}

export function waitSampler(url: string): WaitSampler {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const tallies = new Map<string, Tally>();
  /** The database's transactions so far, committed and rolled back. */
  const transactions = async () =>
    Number((await sql<{ n: string }[]>`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`)[0]!.n);
  return {
    async during(side, work) {
      const tally = tallies.get(side) ?? tallies.set(side, { samples: 0, counts: new Map(), transactions: 0, seconds: 0 }).get(side)!;
      const before = await transactions();
      const started = performance.now();
      let running = true;
      let samples = 0;
      const sampling = (async () => {
        while (running) {
          samples++;
          const rows = await sql<{ what: string; n: number }[]>`
            SELECT CASE WHEN state = 'active' THEN coalesce(wait_event_type || ':' || wait_event, 'CPU')
                        ELSE state || coalesce(' (' || wait_event_type || ':' || wait_event || ')', '') END AS what,
                   count(*)::int AS n
            FROM pg_stat_activity
            WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND state <> 'idle'
            GROUP BY 1`;
          tally.samples++;
          for (const { what, n } of rows) tally.counts.set(what, (tally.counts.get(what) ?? 0) + n);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      try {
        return await work();
      } finally {
        running = false;
        await sampling;
        tally.seconds += (performance.now() - started) / 1000;
        // The sampler's own (one per sample, and the first count's) left out; PostgreSQL publishes the counts within a second.
        tally.transactions += (await transactions()) - before - samples - 1;
      }
    },
    report() {
      return [...tallies].map(([side, { samples, counts, transactions, seconds }]) => {
        const busy = [...counts.values()].reduce((a, b) => a + b, 0) / Math.max(samples, 1);
        const parts = [...counts]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 6)
          .map(([what, n]) => `${what} ${fmt(n / Math.max(samples, 1), 1)}`);
        return (
          `${side}: ${fmt(transactions / seconds)} transactions/s; ${fmt(busy, 1)} backends busy on average (${samples} samples): ` + parts.join(', ')
        );
      });
    },
    close: () => sql.end(),
  };
}
