import { afterAll, describe, expect, it } from 'vitest';
import { openEmbedded, openPostgres } from '../src/db/database.js';
import { loginAt, run, serviceDatabase, startService, type ServiceDatabase } from './support/service.js';

// docs/operations.md#migrations: `dept-tenant migrate` applies the migrations
// without starting the service, the schema only (the Dockerfile runs it into
// the image's data directory): no admin, no token secret; the first start
// makes those.

let db: ServiceDatabase | undefined;
afterAll(() => db?.dispose());

describe('dept-tenant migrate', () => {
  it('migrates an empty database, schema only, once; the service then starts on it and makes its admin', async () => {
    db = await serviceDatabase();
    const first = run('migrate', db.env);
    expect((await first.exited).code, first.output()).toBe(0);
    expect(first.output()).toMatch(/Applied 001_init\.sql, .*\.sql to /);
    const again = run('migrate', db.env);
    expect((await again.exited).code, again.output()).toBe(0);
    expect(again.output()).toMatch(/has every migration already/);

    const raw = db.kind === 'embedded' ? await openEmbedded(db.env.DATA_DIR) : openPostgres(db.directUrl!, { max: 1 });
    try {
      const [users] = await raw.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sys_user`;
      const [secrets] = await raw.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM app_setting`;
      expect({ users: users!.n, settings: secrets!.n }).toEqual({ users: 0, settings: 0 });
    } finally {
      await raw.close();
    }

    const service = await startService({ ...db.env, ADMIN_PASSWORD: 'migrate-test-pw-1' });
    try {
      expect(await loginAt(service.base, '000000', 'admin', 'migrate-test-pw-1')).toMatch(/^ey/);
    } finally {
      await service.stop();
    }
  });
});
