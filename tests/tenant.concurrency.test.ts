import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, buildTestApp, Client, secondNode, type TestApp } from './support/app.js';
import { createTenant, locationId, createTenantWithAdmin, tenantBody } from './support/tenant-fixtures.js';
import { uniq } from './support/names.js';

// Tenant writes under concurrency (docs/api-rules.md#tenants): companyName stays unique,
// ids and codes never collide across service instances sharing one
// database, and no live tenant ends up under a deleted parent. On
// PostgreSQL the requests really run in parallel (a pool of 20 connections);
// on PGlite they are serialised by its single connection.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

const BASE = '/system/tenant-api';

/** Live tenants whose parent row is deleted or missing: must always be empty. */
async function orphans() {
  return t.sql<{ tenantId: string; tenantParent: string }[]>`
    SELECT c.tenant_id AS "tenantId", c.tenant_parent AS "tenantParent"
    FROM sys_tenant c LEFT JOIN sys_tenant p ON p.tenant_id = c.tenant_parent
    WHERE c.del_flag = '0' AND c.tenant_parent IS NOT NULL AND (p.tenant_id IS NULL OR p.del_flag <> '0')`;
}

describe('tenant concurrency', () => {
  it('20 concurrent creates with one companyName: exactly one 200, nineteen 409', async () => {
    const companyName = uniq('Race Co');
    const results = await Promise.all(Array.from({ length: 20 }, () => t.root.post(BASE, tenantBody({ companyName }))));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    for (const r of results.filter((x) => x.status === 409)) {
      expect(r.body).toMatchObject({ code: 409, data: null });
      expect(r.body.msg).toMatch(/companyName/);
    }
    const rows = await t.sql<{ id: string; delFlag: string }[]>`
      SELECT id::text AS id, del_flag AS "delFlag" FROM sys_tenant WHERE company_name = ${companyName}`;
    expect(rows).toHaveLength(1);
    expect(rows[0]!.delFlag).toBe('0');
    expect(rows[0]!.id).toBe(locationId(results.find((r) => r.status === 200)!));
  });

  it('two service instances on one database: 400 concurrent creates give 400 distinct ids and codes', async () => {
    const second = await secondNode(t);
    try {
      const login = async (app: FastifyInstance) => {
        const res = await new Client(app).post('/auth/login', { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD });
        expect(res.status).toBe(200);
        return new Client(app, res.body.data.access_token);
      };
      const nodes = [await login(t.app), await login(second.app)];
      // The generated JWT secret is shared through the database: each node honours the other's token.
      expect((await new Client(second.app, nodes[0]!.token).get('/auth/me')).status).toBe(200);
      expect((await new Client(t.app, nodes[1]!.token).get('/auth/me')).status).toBe(200);

      const prefix = uniq('Node');
      const locations: string[] = [];
      let failures = 0;
      for (let batch = 0; batch < 10; batch++) {
        const calls = nodes.flatMap((node, n) =>
          Array.from({ length: 20 }, (_, i) =>
            node.post(BASE, tenantBody({ tenantName: `${prefix}-${n}`, companyName: `${prefix}-${n}-${batch}-${i}` })),
          ),
        );
        for (const res of await Promise.all(calls)) {
          if (res.status === 200) locations.push(locationId(res));
          else failures++;
        }
      }
      expect(failures).toBe(0);
      expect(locations).toHaveLength(400);
      expect(new Set(locations).size).toBe(400);

      const rows = await t.sql<{ id: string; tenantId: string }[]>`
        SELECT id::text AS id, tenant_id AS "tenantId" FROM sys_tenant
        WHERE del_flag = '0' AND tenant_name IN (${prefix + '-0'}, ${prefix + '-1'})`;
      expect(rows).toHaveLength(400);
      expect(new Set(rows.map((r) => r.id)).size).toBe(400);
      expect(new Set(rows.map((r) => r.tenantId)).size).toBe(400);
      for (const r of rows) {
        expect(r.id).toMatch(/^[1-9]\d{18}$/);
        expect(r.tenantId).toMatch(/^\d{6}$/);
      }
      expect(new Set(rows.map((r) => r.id))).toEqual(new Set(locations));

      // The API agrees: both nodes list the same 200 per node, with distinct codes.
      for (const node of nodes) {
        for (const n of [0, 1]) {
          const list = await node.get(`${BASE}/list?pageSize=1000&tenantName=${encodeURIComponent(`${prefix}-${n}`)}`);
          expect(list.status).toBe(200);
          expect(list.body.data.total).toBe(200);
          expect(new Set(list.body.data.rows.map((r: { tenantId: string }) => r.tenantId)).size).toBe(200);
        }
      }
    } finally {
      await second.close();
    }
  });

  it('a child create racing the delete of its parent never leaves a live child under a deleted parent', async () => {
    const p = await createTenantWithAdmin(t);
    const outcomes = new Set<string>();
    for (let round = 0; round < 10; round++) {
      // Alternate superadmin and a tenant admin (whose refusal is 403, not 400), and the order of the calls.
      const as = round % 2 === 0 ? t.root : p.admin;
      const parent = await createTenant(as, {}, t.root);
      const create = () => as.post(BASE, tenantBody({ tenantParent: parent.tenantId }));
      const remove = () => as.delete(`${BASE}/${parent.id}`);
      const [created, deleted] = round % 4 < 2 ? await Promise.all([create(), remove()]) : (await Promise.all([remove(), create()])).reverse();
      const refusedCreate = as === t.root ? 400 : 403;
      const pair = `${created!.status}/${deleted!.status}`;
      expect([`200/409`, `${refusedCreate}/200`]).toContain(pair);
      outcomes.add(pair);

      const [parentRow] = await t.sql<{ delFlag: string }[]>`SELECT del_flag AS "delFlag" FROM sys_tenant WHERE id = ${parent.id}::bigint`;
      const children = await t.sql<{ n: number }[]>`
        SELECT count(*) AS n FROM sys_tenant WHERE tenant_parent = ${parent.tenantId} AND del_flag = '0'`;
      if (created!.status === 200) {
        expect(parentRow!.delFlag).toBe('0');
        expect(children[0]!.n).toBe(1);
      } else {
        expect(parentRow!.delFlag).toBe('2');
        expect(children[0]!.n).toBe(0);
      }
    }
    expect(await orphans()).toEqual([]);
  });

  it('concurrent deletes of a parent and its only child: the parent survives or the child went first', async () => {
    for (let round = 0; round < 10; round++) {
      const parent = await createTenant(t.root);
      const child = await createTenant(t.root, { tenantParent: parent.tenantId });
      const [delParent, delChild] = await Promise.all([t.root.delete(`${BASE}/${parent.id}`), t.root.delete(`${BASE}/${child.id}`)]);
      expect(delChild.status).toBe(200);
      expect([200, 409]).toContain(delParent.status);
    }
    expect(await orphans()).toEqual([]);
  });
});
