import { describe, expect, it } from 'vitest';
import { DeptTenantContainer } from '@dept-tenant/testcontainers';

// A start that fails says why: the service's own last log lines are in the
// error, though testcontainers removes the container and its log with it.
describe('a failed start', () => {
  it('carries the last lines of the service log', async () => {
    const start = new DeptTenantContainer()
      // Nothing listens on port 9 of the container's own loopback: the service retries, then gives up.
      .withDatabaseUrl('postgres://nobody@127.0.0.1:9/none')
      .withEnvironment({ DB_START_TIMEOUT: '3' })
      .withStartupTimeout(20_000)
      .start();
    const err = await start.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).toMatch(/did not start/);
    expect(message).toMatch(/last lines of its log/);
    expect(message).toMatch(/127\.0\.0\.1:9.*(refused|not answering)|Failed to start/);
  });
});
