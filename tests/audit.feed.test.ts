import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordAudit } from '../src/audit/audit.record.js';
import type { Sql } from '../src/db/database.js';
import { ADMIN_PASSWORD, buildTestApp, Client, secondNode, type Node as AppNode, type TestApp } from './support/app.js';
import { expectNewestCopy } from './support/invariants.js';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';

// The promise of GET /system/audit-api/changes (docs/api-rules.md#audit-trail-and-change-feed): a reader that
// keeps its cursor never misses a record and never sees one twice, while
// writers on several nodes commit concurrently, transactions of very
// different lengths included (a record inserted early may commit late).
// PostgreSQL: two app instances with their own pools on one database.
// PGlite: the single-instance variant (one process owns the database).

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

const WORKERS_PER_NODE = 4;
const ITERATIONS = 40;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const random = (n: number) => Math.floor(Math.random() * n);

interface Node {
  app: FastifyInstance;
  sql: Sql;
  root: Client;
  /** One admin client per tenant, signed in on this node. */
  admins: { tenantId: string; admin: Client }[];
}

describe('the change feed under concurrent writers', () => {
  it('a reader paging with small pages sees every record exactly once, in cursor order', async () => {
    const tenants = await Promise.all([1, 2, 3].map(() => createTenantWithAdmin(t)));
    const nodes: Node[] = [{ app: t.app, sql: t.appSql, root: t.root, admins: tenants.map((x) => ({ tenantId: x.tenantId, admin: x.admin })) }];
    let second: AppNode | undefined;
    if (t.kind !== 'pglite') {
      second = await secondNode(t);
      const app = second.app;
      const signIn = async (tenantId: string, username: string, password: string) => {
        const res = await new Client(app).post('/auth/login', { tenantId, username, password });
        expect(res.status).toBe(200);
        return new Client(app, res.body.data.access_token);
      };
      nodes.push({
        app,
        sql: second.sql,
        root: await signIn('000000', 'admin', ADMIN_PASSWORD),
        admins: await Promise.all(tenants.map(async (x) => ({ tenantId: x.tenantId, admin: await signIn(x.tenantId, x.username, x.password) }))),
      });
    }

    const started = performance.now();
    let writing = true;
    let writes = 0;
    const writer = async (node: Node, worker: number) => {
      for (let i = 0; i < ITERATIONS; i++) {
        const { tenantId, admin } = node.admins[random(node.admins.length)]!;
        const kind = random(4);
        if (kind === 0) {
          // A long-ish transaction: its records are inserted at the start and commit up to 250 ms later.
          await node.sql.begin(async (tx) => {
            const actor = { tenantId, userName: `load-${worker}` };
            await recordAudit(tx, actor, [{ action: 'dept.update', entityType: 'dept', entityId: i, changes: { step: 'first' } }]);
            await tx`SELECT pg_sleep(${random(250) / 1000})`;
            await recordAudit(tx, actor, [{ action: 'dept.update', entityType: 'dept', entityId: i, changes: { step: 'second' } }]);
          });
        } else if (kind === 1) {
          // A refused login: its record is written on its own, outside any transaction. A new
          // username each time, so the lockout (5 per tenant and username) never answers instead.
          const refused = await node.root.post('/auth/login', {
            tenantId,
            username: `ghost-${worker}-${i}-${random(1e9)}`,
            password: 'wrong-password',
          });
          expect(refused.status).toBe(401);
        } else {
          const res = await admin.post('/system/dept-api', { parentId: 0, deptName: `N${node === nodes[0] ? 1 : 2}-${worker}-${i}` });
          expect(res.status).toBe(200);
        }
        writes++;
        await sleep(random(15));
      }
    };

    const seen: string[] = [];
    let pages = 0;
    const reader = async () => {
      let cursor = '0';
      let quiet = 0;
      // Until the writers are done and two pages in a row come back empty.
      while (writing || quiet < 2) {
        const node = nodes[pages % nodes.length]!;
        const res = await node.root.get(`/system/audit-api/changes?after=${cursor}&limit=${3 + random(5)}`);
        expect(res.status).toBe(200);
        pages++;
        const { events, cursor: next } = res.body.data as { events: { id: string }[]; cursor: string };
        seen.push(...events.map((e) => e.id));
        cursor = next;
        quiet = events.length === 0 && !writing ? quiet + 1 : 0;
        if (events.length === 0) await sleep(5);
      }
    };

    const reading = reader();
    await Promise.all(nodes.flatMap((node) => Array.from({ length: WORKERS_PER_NODE }, (_, w) => writer(node, w))));
    writing = false;
    await reading;
    const seconds = ((performance.now() - started) / 1000).toFixed(1);

    const stored = await t.sql<{ id: string }[]>`SELECT position::text AS id FROM audit_log ORDER BY position`;
    const [unpositioned] = await t.sql<{ n: number }[]>`SELECT count(*) AS n FROM audit_log WHERE position IS NULL`;
    console.log(`[audit feed] ${nodes.length} node(s), ${writes} writes, ${stored.length} records, ${pages} pages read in ${seconds} s`);

    expect(unpositioned!.n).toBe(0);
    expect(new Set(seen).size).toBe(seen.length); // never twice
    const asNumbers = seen.map(BigInt);
    expect(asNumbers.every((id, k) => k === 0 || id > asNumbers[k - 1]!)).toBe(true); // in cursor order
    expect(seen).toEqual(stored.map((r) => r.id)); // never missed
    expect(writes).toBe(nodes.length * WORKERS_PER_NODE * ITERATIONS);
    // The runs of both nodes kept the copy of the newest records to the newest 1,001, whole (src/audit/audit.newest.ts).
    await expectNewestCopy(t.sql);

    await second?.close();
  });
});
