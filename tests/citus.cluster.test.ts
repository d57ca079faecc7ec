import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISTRIBUTED_TABLES, REFERENCE_TABLES } from '../src/db/citus.js';
import { buildTestApp, type Client, type TestApp } from './support/app.js';
import { onDatabase } from './support/citus-cluster.js';
import { freePort } from './support/oidc/provider.js';
import { citusNodesOfRun } from './support/test-database.js';
import { call, loginAt, startService } from './support/service.js';
import { ADMIN_PASSWORD } from './support/constants.js';
import { createCitusDatabase, dropCitusDatabase } from './support/citus-cluster.js';
import { createTenantWithAdmin, type TenantWithAdmin } from './support/tenant-fixtures.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import { parseAllowedCidrs } from '../src/outbound/outbound.address.js';

// What only a Citus cluster can show (docs/scale-out.md#running-on-citus),
// run in the suite's Citus pass (TEST_CITUS_URL) and skipped elsewhere: the
// tables placed as the service places them, a statement reaching every
// shard refused on the service's connections, and the cluster growing while
// the service serves: a worker added and the shards rebalanced, then one
// tenant moved to shards of its own, with writers and readers running
// throughout: no acknowledged write lost, no answer but 200 or 503, none
// slower than 15 s.

const nodes = citusNodesOfRun();
const ROOT = new URL('..', import.meta.url).pathname;

describe.skipIf(!nodes)('on a Citus cluster', () => {
  let t: TestApp;
  let tenant: { tenantId: string; rootDeptId: number; admin: Client };
  /** This file's database name, on every node. */
  let database: string;

  beforeAll(async () => {
    t = await buildTestApp();
    tenant = await createTenantWithAdmin(t);
    database = (await t.sql<{ database: string }[]>`SELECT current_database() AS database`)[0]!.database;
  }, 120_000);
  afterAll(async () => t?.close());

  it('places the tenant-owned tables distributed by tenant_id in one colocation group, and the platform tables as reference tables', async () => {
    const placed = await t.sql<{ name: string; method: string; column: string | null; colocation: number }[]>`
      SELECT logicalrelid::regclass::text AS name, partmethod AS method,
        column_to_column_name(logicalrelid, partkey) AS column, colocationid AS colocation
      FROM pg_dist_partition`;
    const byName = new Map(placed.map((p) => [p.name, p]));
    for (const table of DISTRIBUTED_TABLES) expect(byName.get(table), table).toMatchObject({ method: 'h', column: 'tenant_id' });
    expect(new Set(DISTRIBUTED_TABLES.map((table) => byName.get(table)!.colocation)).size).toBe(1);
    for (const table of REFERENCE_TABLES) expect(byName.get(table), table).toMatchObject({ method: 'n' });
    expect(byName.has('schema_migrations')).toBe(false);
  });

  it("refuses, on the service's own connections, a statement that would run on every shard; a tenant's requests run", async () => {
    await expect(t.appSql`SELECT count(*) FROM sys_dept`).rejects.toThrow(/multi-task query/);
    expect((await tenant.admin.get('/system/dept-api/list')).status).toBe(200);
    expect((await tenant.admin.get('/system/audit-api/list?pageSize=5')).status).toBe(200);
  });

  it('a publish one server sees before another: the change feed and a webhook never pass a record they did not give', async () => {
    // The moment is made by hand: the copy of audit_feed on the worker that holds one tenant's records is set back
    // below that record, as a publish that has reached the coordinator and the other worker but not it yet.
    const receiver = await WebhookReceiver.start();
    let failing = true;
    receiver.answer = () => ({ status: failing ? 503 : 204 });
    const webhooks = {
      allowed: parseAllowedCidrs('127.0.0.0/8,::1/128'),
      timeoutMs: 1000,
      retrySchedule: Array<number>(40).fill(0.5),
      pollMs: 100,
      maintenanceMs: 500,
    };
    const app = await buildTestApp({ webhooks });
    const workerOf = async (tenantId: string) =>
      (
        await app.sql<{ port: number }[]>`
        SELECT nodeport AS port FROM pg_dist_shard_placement WHERE shardid = get_shard_id_for_distribution_column('audit_log', ${tenantId}::text)`
      )[0]!.port;
    const { database: own } = (await app.sql<{ database: string }[]>`SELECT current_database() AS database`)[0]!;
    let setBack = async () => {};
    try {
      const byWorker = new Map<number, TenantWithAdmin>();
      for (let i = 0; i < 16 && byWorker.size < 2; i++) {
        const made = await createTenantWithAdmin(app);
        byWorker.set(await workerOf(made.tenantId), made);
      }
      expect(byWorker.size, 'two tenants whose records lie on different workers').toBe(2);
      const [[lagging, first], [, second]] = [...byWorker] as [[number, TenantWithAdmin], [number, TenantWithAdmin]];
      expect((await app.root.post('/system/webhook-api', { url: receiver.url('/gap'), events: ['dept.create'] })).status).toBe(200);
      const position = async (as: Client, deptName: string) => {
        const res = await as.post('/system/dept-api', { parentId: 0, deptName });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        const id = String(res.headers.location).split('/').pop()!;
        const read = async () =>
          (await app.sql<{ p: string | null }[]>`SELECT position::text AS p FROM audit_log WHERE action = 'dept.create' AND entity_id = ${id}`)[0]
            ?.p ?? null;
        await expect.poll(read, { timeout: 15_000 }).not.toBeNull();
        return BigInt((await read())!);
      };
      const x = await position(first.admin, 'Gap first');
      const y = await position(second.admin, 'Gap second');
      expect(y > x).toBe(true);
      await expect
        .poll(async () => BigInt((await app.sql<{ last: string }[]>`SELECT last_position::text AS last FROM audit_feed`)[0]!.last) >= y, {
          timeout: 15_000,
        })
        .toBe(true);

      const { shard } = (
        await app.sql<{ shard: string }[]>`SELECT shardid::text AS shard FROM pg_dist_shard WHERE logicalrelid = 'audit_feed'::regclass`
      )[0]!;
      const worker = postgres(
        onDatabase(
          nodes!.find((n) => new URL(n).port === String(lagging))!,
          own,
        ),
        { max: 1, onnotice: () => {} },
      );
      const copy = worker(`audit_feed_${shard}`);
      const { was } = (await worker<{ was: string }[]>`SELECT last_position::text AS was FROM ${copy}`)[0]!;
      setBack = async () => {
        await worker`UPDATE ${copy} SET last_position = greatest(last_position, ${was}::bigint)`;
        await worker.end();
      };
      await worker`UPDATE ${copy} SET last_position = ${String(x - 1n)}::bigint`;

      // The feed after the record before the gap: the first record it gives is that record, or none yet.
      const page = await app.root.get(`/system/audit-api/changes?after=${x - 1n}&limit=10`);
      expect(page.status).toBe(200);
      const ids = (page.body.data.events as { id: string }[]).map((e) => BigInt(e.id));
      if (ids.length > 0) expect(ids[0]).toBe(x);

      // The webhook, whose first try of the record failed: once the receiver answers, that record comes first.
      const from = receiver.received.length;
      failing = false;
      const names = () =>
        receiver.received
          .slice(from)
          .filter((r) => r.path === '/gap')
          .map((r) => JSON.parse(r.raw.toString()).data.changes.deptName as string);
      await expect.poll(() => names().includes('Gap second'), { timeout: 20_000 }).toBe(true);
      expect(names().slice(0, 2)).toEqual(['Gap first', 'Gap second']);
    } finally {
      await setBack();
      await app.close();
      await receiver.close();
    }
  }, 120_000);

  it('moves a database of one server to the cluster by the documented procedure: the same answers after', async () => {
    // "One server": a database of the coordinator's own PostgreSQL without the citus extension.
    const coordinator = nodes![0]!;
    const suffix = Math.random().toString(36).slice(2, 10);
    const [single, cluster] = [`single_${suffix}`, `moved_${suffix}`];
    const admin = postgres(coordinator, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE DATABASE ${single}`);
    const dumpFile = join(await mkdtemp(join(tmpdir(), 'citus-move-')), 'single.dump');
    try {
      const before = await startService({ DATABASE_URL: onDatabase(coordinator, single), ADMIN_PASSWORD });
      const reads = async (base: string) => {
        const token = await loginAt(base, '000000', 'admin', ADMIN_PASSWORD);
        const get = async (path: string) => (await call(base, 'GET', path, undefined, token)).body.data;
        return {
          tree: await get('/system/dept-api/tree'),
          tenants: await get('/system/tenant-api/list?pageNum=1&pageSize=50'),
          users: await get('/system/user-api/list?pageNum=1&pageSize=50'),
          audit: await get('/system/audit-api/list?pageNum=1&pageSize=50'),
          webhooks: await get('/system/webhook-api/list?pageNum=1&pageSize=50'),
        };
      };
      let answers: Awaited<ReturnType<typeof reads>>;
      try {
        const token = await loginAt(before.base, '000000', 'admin', ADMIN_PASSWORD);
        const made = await call(
          before.base,
          'POST',
          '/system/tenant-api',
          {
            tenantName: 'Moved',
            companyName: `Moved ${suffix}`,
            contactUserName: 'Contact',
            contactPhone: '13800138000',
            username: 'moved_admin',
            password: 'moved-admin-pw',
          },
          token,
        );
        expect(made.status, JSON.stringify(made.body)).toBe(200);
        const root = (await call(before.base, 'GET', '/system/dept-api/list?parentId=0', undefined, token)).body.data[0].deptId;
        for (const name of ['North', 'South'])
          expect((await call(before.base, 'POST', '/system/dept-api', { parentId: root, deptName: name }, token)).status).toBe(200);
        const hook = await call(before.base, 'POST', '/system/webhook-api', { url: 'https://hooks.example.com/moved', events: ['dept.*'] }, token);
        expect(hook.status, JSON.stringify(hook.body)).toBe(200);
        await expect.poll(async () => (await reads(before.base)).audit.rows.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
        answers = await reads(before.base);
      } finally {
        await before.stop();
      }
      // The procedure (docs/scale-out.md#moving-a-database-of-one-server-to-citus): dump, a database on every node
      // with the extension and the workers joined, restore on the coordinator, start the service there.
      const bin = '/usr/lib/postgresql/15/bin';
      const tool = (name: string, args: string[]) => {
        const run = spawnSync(join(bin, name), args, { encoding: 'utf8', timeout: 120_000 });
        if (run.status !== 0) throw new Error(`${name}: ${run.stderr}`);
      };
      tool('pg_dump', ['-Fc', '-f', dumpFile, onDatabase(coordinator, single)]);
      await createCitusDatabase(nodes!, cluster);
      try {
        tool('pg_restore', ['--no-owner', '-d', onDatabase(coordinator, cluster), dumpFile]);
        const after = await startService({ DATABASE_URL: onDatabase(coordinator, cluster), ADMIN_PASSWORD });
        try {
          expect(after.output()).toContain('"placed":["sys_package"');
          const { audit, ...rest } = await reads(after.base);
          const { audit: auditBefore, ...restBefore } = answers!;
          // An idle endpoint's cursor may have moved on since (its filter matched none of the logins made to read
          // after, and the maintenance catches it up): never back. The rest is as it was.
          const cursors = (r: typeof rest) => (r.webhooks as { rows: { cursor: string }[] }).rows.map((w) => BigInt(w.cursor));
          cursors(rest).forEach((c, i) => expect(c >= cursors(restBefore)[i]!).toBe(true));
          const noCursor = (r: typeof rest) => ({
            ...r,
            webhooks: { ...(r.webhooks as object), rows: (r.webhooks as { rows: object[] }).rows.map((w) => ({ ...w, cursor: undefined })) },
          });
          expect(noCursor(rest)).toEqual(noCursor(restBefore));
          // Every record the trail held is there, as it was; the logins made to read it after add their own.
          expect(audit.rows).toEqual(expect.arrayContaining(auditBefore.rows));
        } finally {
          await after.stop();
        }
      } finally {
        await dropCitusDatabase(nodes!, cluster);
      }
    } finally {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${single} WITH (FORCE)`);
      await admin.end();
      await rm(dirname(dumpFile), { recursive: true, force: true });
    }
  }, 240_000);

  it('grows while serving: a worker added and rebalanced, then a tenant isolated; no acknowledged write lost, no answer but 200 or 503, none over 15 s', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'citus-grow-'));
    const port = await freePort();
    const script = (...args: string[]) => {
      const run = spawnSync('bash', [join(ROOT, '.ci/citus.sh'), ...args], { encoding: 'utf8', timeout: 120_000 });
      if (run.status !== 0) throw new Error(`.ci/citus.sh ${args.join(' ')}: ${run.stderr}`);
    };
    script('node', dir, String(port));
    let stopLoad = async () => {};
    let stopOperator = async () => {};
    try {
      // The new worker holds this file's database too, with the extension, as every node does.
      const worker = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {} });
      await worker.unsafe(`CREATE DATABASE ${database}`);
      await worker.end();
      const inIt = postgres(onDatabase(`postgres://postgres@127.0.0.1:${port}/postgres`, database), { max: 1, onnotice: () => {} });
      await inIt`CREATE EXTENSION citus`;
      // Where the coordinator's connections to its nodes require TLS (Citus's default; .ci/citus.sh turns it off
      // on loopback), the extension turns SSL on by a reload: wait for it.
      const coordinator = postgres(nodes![0]!, { max: 1, onnotice: () => {} });
      const [setting] = await coordinator<{ conninfo: string }[]>`SELECT current_setting('citus.node_conninfo') AS conninfo`;
      await coordinator.end();
      if (/sslmode=(require|verify)/.test(setting!.conninfo)) {
        await expect.poll(async () => (await inIt<{ ssl: string }[]>`SHOW ssl`)[0]!.ssl, { timeout: 10_000 }).toBe('on');
      }
      await inIt.end();

      // Writers and readers of one tenant, bounded in requests and time, until the growing is done.
      let growing = true;
      const acknowledged: number[] = [];
      const answers: { status: number; ms: number }[] = [];
      const timed = async (request: () => Promise<{ status: number; headers: Record<string, unknown> }>) => {
        const start = performance.now();
        const res = await request();
        answers.push({ status: res.status, ms: performance.now() - start });
        return res;
      };
      let n = 0;
      const writer = async () => {
        while (growing && n < 3_000) {
          const res = await timed(() => tenant.admin.post('/system/dept-api', { parentId: tenant.rootDeptId, deptName: `Grow ${++n}` }));
          if (res.status === 200) acknowledged.push(Number(String(res.headers.location).split('/').pop()));
        }
      };
      const reader = async () => {
        while (growing && answers.length < 6_000) await timed(() => tenant.admin.get('/system/dept-api/list'));
      };
      const load = Promise.all([writer(), writer(), reader()]);
      stopLoad = async () => {
        growing = false;
        await load.catch(() => {});
      };

      const shardOf = async (code: string) =>
        (await t.sql<{ shard: string }[]>`SELECT get_shard_id_for_distribution_column('sys_dept', ${code}::text)::text AS shard`)[0]!.shard;
      const before = await shardOf(tenant.tenantId);
      // An operator's session of its own, without the pools' 5 s statement deadline: moving shards takes longer.
      const operator = postgres(onDatabase(nodes![0]!, database), { max: 1, onnotice: () => {} });
      stopOperator = () => operator.end();
      await operator`SELECT citus_add_node('127.0.0.1', ${port})`;
      await operator`SELECT citus_rebalance_start()`;
      // A statement of its own: in the start's transaction the wait never ends.
      await operator`SELECT citus_rebalance_wait()`;
      const { moved } = (
        await t.sql<{ moved: number }[]>`
        SELECT count(*)::int AS moved FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid) WHERE n.nodeport = ${port}`
      )[0]!;
      await operator`SELECT isolate_tenant_to_new_shard('sys_dept', ${tenant.tenantId}::text, 'CASCADE', shard_transfer_mode => 'block_writes')`;
      growing = false;
      await load;

      expect(moved).toBeGreaterThan(0);
      const after = await shardOf(tenant.tenantId);
      expect(after).not.toBe(before);
      const { others } = (
        await t.sql<{ others: number }[]>`
        SELECT count(*)::int AS others FROM sys_tenant s
        WHERE s.tenant_id <> ${tenant.tenantId} AND get_shard_id_for_distribution_column('sys_dept', s.tenant_id) = ${after}::bigint`
      )[0]!;
      expect(others).toBe(0);

      expect(answers.length).toBeGreaterThan(10);
      expect(answers.filter((a) => a.status !== 200 && a.status !== 503)).toEqual([]);
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(15_000);
      const kept = await t.sql<{ id: number }[]>`
        SELECT dept_id::int AS id FROM sys_dept WHERE tenant_id = ${tenant.tenantId} AND dept_id = ANY (${acknowledged}::bigint[])`;
      expect(kept.length).toBe(acknowledged.length);
      // The tenant reads and writes on its own shards as before.
      expect((await tenant.admin.post('/system/dept-api', { parentId: tenant.rootDeptId, deptName: 'After the growing' })).status).toBe(200);
    } finally {
      await stopLoad();
      await stopOperator();
      script('stop', dir);
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
