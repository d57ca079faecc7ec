import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import postgres from 'postgres';
import type { Sql } from '../src/db/database.js';
import { waitForDatabase } from '../src/db/startup.js';
import { ADMIN_PASSWORD } from './support/constants.js';
import { PGBOUNCER_BINARY, pgbouncerAvailable, startPgBouncer, type PgBouncer } from './support/pgbouncer.js';
import { call, loginAt, run, serviceDatabase, startService, type ServiceDatabase } from './support/service.js';

// docs/operations.md#behind-a-pooler with a real PgBouncer in transaction mode
// (tests/support/pgbouncer.ts): the built service starts through it and
// serves writes without prepared statements, LISTEN and the migrations going
// to DATABASE_DIRECT_URL; a refusal that waiting will not change (a database
// the pooler cannot open, a user it does not know, a start-up parameter it
// refuses) fails the start at once, naming the URL refused, instead of
// being retried for DB_START_TIMEOUT.

const skipReason = !inject('databaseUrl')
  ? 'needs a PostgreSQL server for PgBouncer to stand in front of (the suite runs on PGlite)'
  : inject('citusNodes') !== ''
    ? 'not in front of Citus yet: PgBouncer refuses the start-up setting every connection there carries (docs/scale-out.md#not-yet-on-citus)'
    : !pgbouncerAvailable
      ? `no pgbouncer binary at ${PGBOUNCER_BINARY} (apt-get install pgbouncer, or set PGBOUNCER)`
      : undefined;

/** Far above how long a refused start may take: a retried refusal would show as a wait of its whole length. */
const START_TIMEOUT_S = 60;

describe.skipIf(skipReason !== undefined)('a start behind PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer;
  let target: ServiceDatabase;
  let name: string;
  beforeAll(async () => {
    bouncer = await startPgBouncer(inject('databaseUrl'));
    target = await serviceDatabase();
    name = new URL(target.directUrl!).pathname.slice(1);
  });
  afterAll(async () => {
    await bouncer?.stop();
    await target?.dispose();
  });

  const behind = (extra: Record<string, string> = {}) => ({
    DATABASE_URL: bouncer.url(name),
    DATABASE_DIRECT_URL: target.directUrl!,
    DB_PREPARE: 'false',
    DB_START_TIMEOUT: String(START_TIMEOUT_S),
    ...extra,
  });

  /** Runs a start that must fail, and returns its output, checking it failed well before DB_START_TIMEOUT. */
  async function refusedStart(env: Record<string, string>): Promise<string> {
    const started = Date.now();
    const service = run('main', { PORT: '0', HOST: '127.0.0.1', ...env });
    const exit = await service.exited;
    expect(exit.code, service.output()).toBe(1);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(service.output()).not.toContain('retrying');
    return service.output();
  }

  it('serves writes through the pooler: create, update, move, delete, tenant create', async () => {
    const service = await startService(behind({ ADMIN_PASSWORD }));
    try {
      const before = await bouncer.transactions(name);
      const token = await loginAt(service.base, '000000', 'admin', ADMIN_PASSWORD);
      const as = (method: string, path: string, body?: unknown) => call(service.base, method, path, body, token);
      // Each statement runs once on a pooled server connection, without a named prepared statement
      // (which the next transaction, on another server connection, would not find).
      const created: number[] = [];
      for (const deptName of ['Pooled A', 'Pooled B']) {
        const res = await as('POST', '/system/dept-api', { parentId: 0, deptName });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        created.push(Number(res.headers.get('location')!.split('/').pop()));
      }
      const [a, b] = created as [number, number];
      for (let round = 0; round < 3; round++) {
        const current = await as('GET', `/system/dept-api/${a}`);
        expect(current.status).toBe(200);
        const update = await as('PUT', '/system/dept-api', { ...current.body.data, deptName: `Pooled A ${round}` });
        expect(update.status, JSON.stringify(update.body)).toBe(200);
      }
      const moved = await as('GET', `/system/dept-api/${b}`);
      const move = await as('PUT', '/system/dept-api', { ...moved.body.data, parentId: a });
      expect(move.status, JSON.stringify(move.body)).toBe(200);
      expect((await as('GET', `/system/dept-api/${b}`)).body.data.ancestors).toBe(`0,${a}`);
      expect((await as('DELETE', `/system/dept-api/${b}`)).status).toBe(200);
      const tenant = await as('POST', '/system/tenant-api', {
        tenantName: 'Pooled',
        companyName: `Pooled ${Date.now()}`,
        contactUserName: 'Contact',
        contactPhone: '13800138000',
      });
      expect(tenant.status, JSON.stringify(tenant.body)).toBe(200);
      // The requests really went through the pooler.
      expect(await bouncer.transactions(name)).toBeGreaterThan(before + 10);
    } finally {
      expect(await service.stop()).toEqual({ code: 0, signal: null });
    }
  });

  it('fails at once, naming the pooler URL, when the pooler cannot open the database', async () => {
    const output = await refusedStart(behind({ DATABASE_URL: bouncer.url('no_such_db') }));
    expect(output).toContain(`PostgreSQL at 127.0.0.1:${bouncer.port}/no_such_db refused the connection: database "no_such_db" does not exist`);
    expect(output).not.toContain('(direct) refused');
  });

  it('fails at once, naming the direct URL, when DATABASE_DIRECT_URL names a database that does not exist', async () => {
    const direct = new URL(target.directUrl!);
    direct.pathname = '/no_such_db';
    const output = await refusedStart(behind({ DATABASE_DIRECT_URL: direct.toString() }));
    expect(output).toContain(`/no_such_db (direct) refused the connection: database "no_such_db" does not exist (SQLSTATE 3D000)`);
  });

  it('fails at once when the pooler does not know the user', async () => {
    const url = new URL(bouncer.url(name));
    url.username = 'nobody_here';
    const output = await refusedStart(behind({ DATABASE_URL: url.toString() }));
    expect(output).toMatch(/refused the connection: .*authentication failed \(SQLSTATE 08P01\)/);
  });

  it('fails at once on a start-up parameter the pooler refuses (the service sends none but application_name)', async () => {
    // A client of our own with one such parameter, through the same start-up wait.
    const sql = postgres(bouncer.url(name), { max: 1, prepare: false, connection: { search_path: 'public' }, onnotice: () => {} }) as unknown as Sql;
    const db = { sql, direct: sql, description: 'the pooler', directDescription: 'the pooler' };
    const retried: string[] = [];
    try {
      const started = Date.now();
      await expect(waitForDatabase(db, START_TIMEOUT_S, ({ reason }) => retried.push(reason))).rejects.toThrow(
        'the pooler refused the connection: unsupported startup parameter: search_path (SQLSTATE 08P01)',
      );
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(retried).toEqual([]);
    } finally {
      await sql.end();
    }
  });
});

// The reason shows in the report, not only a skipped block.
if (skipReason !== undefined) it('a start behind PgBouncer', (ctx) => ctx.skip(skipReason));
