import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // One container for the files that share it (global-setup.ts); each of those files works in a tenant of its own.
    globalSetup: ['./global-setup.ts'],
    // The files run in parallel workers.
    fileParallelism: true,
    maxWorkers: 3,
    testTimeout: 30_000,
    // snapshot.test.ts starts a container of its own.
    hookTimeout: 180_000,
  },
});
