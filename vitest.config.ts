import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    globalSetup: ['tests/support/global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each file opens its own database; on PGlite each is a separate in-process instance.
    fileParallelism: true,
    // Vitest's default is one worker fewer than the cores: a single worker on the
    // 2-core machines here. Much of a file's time is waiting (on PostgreSQL, on
    // spawned services, on timers), so three workers keep both cores busy.
    maxWorkers: 3,
    // A worker runs its files one after another in one process, importing Fastify,
    // the service and PGlite once instead of once per file (about a fifth of the
    // suite's CPU). Each file still has its own database and its own app; the
    // files share nothing but module constants and the unique-name counters of
    // tests/support (process.env.TZ, the one global a test changes, is restored).
    isolate: false,
  },
});
