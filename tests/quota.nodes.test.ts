import { describe, expect, inject, it } from 'vitest';
import { call, loginAt, serviceDatabase, startService, type Service } from './support/service.js';

// The quota and package rules with two service processes on one PostgreSQL
// database (docs/quotas.md#never-past-the-limit): each process has its own
// pool, so nothing in one process's memory can hold the rules; only the
// statements can. N consumes of 1 against R remaining, sent to both at once,
// succeed exactly min(N, R) times; one Idempotency-Key sent to both counts
// once; a package deleted on one while a tenant takes it on the other is
// refused on one side. (The embedded database belongs to one process.)

const PASSWORD = 'nodes-admin-password';
const API = '/system/quota-api';

describe.skipIf(!inject('databaseUrl'))('two service processes on one PostgreSQL database', () => {
  it('never count past the limit, count a key once, and never delete a package a tenant takes', async () => {
    const db = await serviceDatabase();
    const services: Service[] = [];
    try {
      const env = { ...db.env, ADMIN_PASSWORD: PASSWORD };
      // The first migrates and bootstraps; the second starts on what it made.
      services.push(await startService(env));
      services.push(await startService(env));
      const [a, b] = services.map((s) => s.base) as [string, string];
      const root = await loginAt(a, '000000', 'admin', PASSWORD);

      const tenantWith = async (quotaBo: Record<string, number>, packageBo?: Record<string, unknown>) => {
        const res = await call(
          a,
          'POST',
          '/system/tenant-api',
          {
            tenantName: `Nodes ${Math.random()}`,
            companyName: `Nodes Co ${Math.random()}`,
            contactUserName: 'Li Si',
            contactPhone: '13800138000',
            quotaBo,
            ...(packageBo ? { packageBo } : {}),
          },
          root,
        );
        return res;
      };
      const created = await tenantWith({ merchant: 40 });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const tenant = await call(a, 'GET', String(created.headers.get('location')), undefined, root);
      const tenantId = tenant.body.data.tenantId as string;

      let seq = 0;
      const consume = (base: string, key = `nodes-${++seq}`) =>
        call(base, 'POST', `${API}/${tenantId}/consume`, { counter: 'merchant', amount: 1 }, root, { 'idempotency-key': key });
      const statuses = (await Promise.all(Array.from({ length: 100 }, (_, i) => consume(i % 2 ? a : b)))).map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(40);
      expect(statuses.filter((s) => s === 409)).toHaveLength(60);
      const usage = await call(b, 'GET', `${API}/${tenantId}`, undefined, root);
      expect(usage.body.data.counters.find((c: { counter: string }) => c.counter === 'merchant')).toEqual({
        counter: 'merchant',
        limit: 40,
        used: 40,
        remaining: 0,
      });

      // One key, sent to both processes at once, after a top-up: one count, one answer.
      const read = await call(a, 'GET', String(created.headers.get('location')), undefined, root);
      const { createBy: _cb, createTime: _ct, updateBy: _ub, updateTime: _ut, ...body } = read.body.data;
      expect((await call(a, 'PUT', '/system/tenant-api', { ...body, quotaBo: { ...body.quotaBo, merchant: 100 } }, root)).status).toBe(200);
      const same = await Promise.all(Array.from({ length: 10 }, (_, i) => consume(i % 2 ? a : b, 'one-key-two-nodes')));
      for (const r of same) expect([200, 409]).toContain(r.status);
      expect(new Set(same.filter((r) => r.status === 200).map((r) => JSON.stringify(r.body.data))).size).toBe(1);
      const after = await call(a, 'GET', `${API}/${tenantId}`, undefined, root);
      expect(after.body.data.counters.find((c: { counter: string }) => c.counter === 'merchant').used).toBe(41);

      // A package deleted on one process while a tenant takes it on the other.
      for (let round = 0; round < 6; round++) {
        const pkg = await call(b, 'POST', '/system/package-api', { packageName: `Nodes pkg ${round} ${Math.random()}`, menuIds: '1,2' }, root);
        expect(pkg.status).toBe(200);
        const packageId = String(pkg.headers.get('location')).split('/').at(-1)!;
        const [taken, deleted] = await Promise.all([
          tenantWith({}, { packageId }),
          call(b, 'DELETE', `/system/package-api/${packageId}`, undefined, root),
        ]);
        expect(`${taken.status} ${deleted.status}`).toMatch(/^(200 409|400 200)$/);
      }
    } finally {
      for (const s of services) {
        if (s.child.exitCode === null && s.child.signalCode === null) {
          s.child.kill('SIGKILL');
          await s.exited;
        }
      }
      await db.dispose();
    }
  }, 180_000);
});
