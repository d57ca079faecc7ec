import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { chartBump, chartVersion } from '../src/depts/dept.chart.js';
import { ChartCache } from '../src/depts/dept.chart.cache.js';
import { Dept } from '../src/depts/dept.schema.js';
import { getDept } from '../src/depts/dept.sql.js';
import { etagOf } from '../src/core/version.js';
import { buildTestApp, createdId, secondNode, type Client, type Node, type TestApp } from './support/app.js';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';
import { listDepts, toTree } from './support/dept-reference.js';

// docs/api-rules.md#concurrency-control: ETag/304 on dept list and tree, the chart cache behind them,
// and two app instances on one database never serving a chart older than a
// committed write.

let t: TestApp;
let node2: Node;
let admin: Client;
let tenantId: string;
let root: number;

beforeAll(async () => {
  // The 6,000-department chart below is about bytes, not the request deadline (tests/lifecycle.test.ts)
  // or the statement deadline (tests/outage.test.ts): a loaded CI machine, where the database can fall
  // silent for seconds, must not turn its first, uncached build into a 503.
  t = await buildTestApp({ requestDeadlineMs: 60_000, statementDeadlineMs: 60_000 });
  ({ tenantId, rootDeptId: root, admin } = await createTenantWithAdmin(t));
  node2 = await secondNode(t);
});
afterAll(async () => {
  await node2?.close();
  await t?.close();
});

async function read(app: FastifyInstance, url: string, ifNoneMatch?: string) {
  const res = await app.inject({
    method: 'GET',
    url,
    headers: { authorization: `Bearer ${admin.token}`, ...(ifNoneMatch ? { 'if-none-match': ifNoneMatch } : {}) },
  });
  return { status: res.statusCode, etag: res.headers.etag as string, body: res.body, headers: res.headers };
}
const names = (body: string) => (JSON.parse(body).data as { deptName: string }[]).map((d) => d.deptName);
let n = 0;
const create = async (body: Record<string, unknown> = {}) =>
  createdId(await admin.post('/system/dept-api', { deptName: `C${++n}`, parentId: root, ...body }));

describe('ETag and If-None-Match', () => {
  it.each(['/system/dept-api/list', '/system/dept-api/tree'])('%s: 304 without a body on a match, the current chart on a stale tag', async (url) => {
    const first = await read(t.app, url);
    expect(first.status).toBe(200);
    expect(first.etag).toMatch(/^"[^"]+"$/);
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(first.body)).toMatchObject({ code: 200, msg: 'success' });

    const same = await read(t.app, url, first.etag);
    expect(same.status).toBe(304);
    expect(same.body).toBe('');
    expect(same.etag).toBe(first.etag);
    expect((await read(t.app, url, `"other", W/${first.etag}`)).status).toBe(304);

    await create({ deptName: `New for ${url.split('/').pop()}` });
    const stale = await read(t.app, url, first.etag);
    expect(stale.status).toBe(200);
    expect(stale.etag).not.toBe(first.etag);
    expect(stale.body).toContain(`New for ${url.split('/').pop()}`);
    expect((await read(t.app, url, stale.etag)).status).toBe(304);
  });

  it('every kind of write changes the tag: create, update, move, delete', async () => {
    const tag = async () => (await read(t.app, '/system/dept-api/tree')).etag;
    const seen = [await tag()];
    const a = await create();
    seen.push(await tag());
    const b = await create();
    seen.push(await tag());
    expect((await admin.put('/system/dept-api', { deptId: a, parentId: root, deptName: 'Renamed A' })).status).toBe(200);
    seen.push(await tag());
    expect((await admin.put('/system/dept-api', { deptId: a, parentId: b, deptName: 'Renamed A' })).status).toBe(200);
    seen.push(await tag());
    expect((await admin.delete(`/system/dept-api/${a}`)).status).toBe(200);
    seen.push(await tag());
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('list filters get distinct tags and entries; another tenant has its own', async () => {
    const filters = ['', '?status=0', '?status=1', `?parentId=${root}`, '?deptName=C', '?deptName=C&status=0'];
    const replies = await Promise.all(filters.map((f) => read(t.app, `/system/dept-api/list${f}`)));
    expect(new Set(replies.map((r) => r.etag)).size).toBe(filters.length);
    expect(JSON.parse(replies[2]!.body).data).toEqual([]);
    const treeTag = (await read(t.app, '/system/dept-api/tree')).etag;
    expect(replies.map((r) => r.etag)).not.toContain(treeTag);
    // The same query from the platform tenant's superadmin is another chart.
    const platform = await t.root.request('GET', '/system/dept-api/list');
    expect(names(JSON.stringify(platform.body))).not.toContain(names(replies[0]!.body)[0]);
    // Empty filters are no filters: the same entry as no query at all.
    expect((await read(t.app, '/system/dept-api/list?status=&parentId=')).etag).toBe(replies[0]!.etag);
  });
});

describe('two app instances on one database', () => {
  it('a write on one is seen by the next tree and list read on the other, even with its stale tag', async () => {
    for (const [writer, reader] of [
      [t.app, node2.app],
      [node2.app, t.app],
    ] as const) {
      const tree = await read(reader, '/system/dept-api/tree');
      const list = await read(reader, '/system/dept-api/list');
      const name = `Seen ${++n}`;
      const res = await writer.inject({
        method: 'POST',
        url: '/system/dept-api',
        headers: { authorization: `Bearer ${admin.token}` },
        payload: { deptName: name, parentId: root },
      });
      expect(res.statusCode).toBe(200);
      const treeAfter = await read(reader, '/system/dept-api/tree', tree.etag);
      expect(treeAfter.status).toBe(200);
      expect(treeAfter.body).toContain(name);
      const listAfter = await read(reader, '/system/dept-api/list');
      expect(listAfter.etag).not.toBe(list.etag);
      expect(names(listAfter.body)).toContain(name);
    }
  });
});

// What the routes answered before the chart cache: rows in schema field order, serialised whole.
const ordered = (d: object): object =>
  Object.fromEntries(
    [...Object.keys(Dept.properties), 'children']
      .filter((k) => k in d)
      .map((k) => [k, k === 'children' ? (d as { children: object[] }).children.map(ordered) : (d as Record<string, unknown>)[k]]),
  );
const envelope = (data: unknown) => `{"code":200,"msg":"success","data":${JSON.stringify(data)}}`;

describe('serialisation', () => {
  it('is byte for byte what the schema serializer produced from listDepts and toTree, and from getDept for GET /{id}', async () => {
    // Escapes, non-ASCII, nulls, set update times, order by orderNum then id, a 40-deep chain.
    const top = await create({ deptName: 'Top "quoted" \\ back', orderNum: 2, leader: 'Zhāng 张', phone: '+86 1', email: 'a@b.co' });
    await create({ deptName: 'Emoji 😀 tab\there', parentId: top, orderNum: 1, status: '1' });
    const second = await create({ deptName: 'Second', parentId: top, orderNum: 0 });
    expect((await admin.put('/system/dept-api', { deptId: second, parentId: top, deptName: 'Second', leader: 'L' })).status).toBe(200);
    let parent = top;
    for (let i = 0; i < 40; i++) parent = await create({ deptName: `Level ${i}`, parentId: parent });

    const rows = await listDepts(t.appSql, tenantId, {});
    expect((await read(t.app, '/system/dept-api/list')).body).toBe(envelope(rows.map(ordered)));
    expect((await read(t.app, '/system/dept-api/tree')).body).toBe(envelope(toTree(rows).map(ordered)));
    const filtered = await listDepts(t.appSql, tenantId, { deptName: 'e', status: '0', parentId: top });
    expect(filtered.length).toBeGreaterThan(0);
    expect((await read(t.app, `/system/dept-api/list?deptName=e&status=0&parentId=${top}`)).body).toBe(envelope(filtered.map(ordered)));

    // GET /{id} answers the same text (src/depts/dept.json.ts), and the ETag If-Match is compared with: etagOf the record getDept reads.
    for (const row of rows) {
      const one = await read(t.app, `/system/dept-api/${row.deptId}`);
      expect(one.body).toBe(envelope(ordered(row)));
      expect(one.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(one.etag).toBe(etagOf((await getDept(t.appSql, tenantId, row.deptId))!));
    }
  });
});

/**
 * A tenant whose tree and list are over 1 MiB, written directly (as another program might): three more
 * roots, 60 divisions under each root, 25 teams under each division, order numbers that tie and repeat,
 * so ids break the ties.
 */
async function bigTenant() {
  const big = await createTenantWithAdmin(t);
  await t.sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, order_num, create_by)
    SELECT ${big.tenantId}, 0, '0', 'Root ' || g, (g * 7) % 3, 'test' FROM generate_series(1, 3) g`;
  await t.sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, order_num, leader, create_by)
    SELECT ${big.tenantId}, r.dept_id, '0,' || r.dept_id, 'Division ' || g || ' ✓', (g * 37) % 11, CASE WHEN g % 2 = 0 THEN 'L"' || g END, 'test'
    FROM sys_dept r, generate_series(1, 60) g WHERE r.tenant_id = ${big.tenantId} AND r.parent_id = 0`;
  await t.sql`
    INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name, order_num, create_by)
    SELECT ${big.tenantId}, d.dept_id, d.ancestors || ',' || d.dept_id, 'Team ' || g, g % 4, 'test'
    FROM sys_dept d, generate_series(1, 25) g WHERE d.tenant_id = ${big.tenantId} AND d.parent_id <> 0`;
  // A program writing sys_dept in SQL moves the chart version on as the service does (docs/operations.md).
  await t.sql`WITH written AS (SELECT 1) ${chartBump(t.sql, big.tenantId)} SELECT 1`;
  return big;
}

describe('a chart of over 1 MiB', () => {
  it('is streamed in chunks with its length, nested and ordered exactly as listDepts and toTree say', async () => {
    const big = await bigTenant();
    const rows = await listDepts(t.appSql, big.tenantId, {});
    expect(rows.length).toBeGreaterThan(6_000);
    const read = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${big.admin.token}` } });

    const tree = await read('/system/dept-api/tree');
    expect(tree.statusCode, tree.body).toBe(200);
    expect(tree.rawPayload.length).toBeGreaterThan(2 ** 20); // more than one chunk
    expect(Number(tree.headers['content-length'])).toBe(tree.rawPayload.length);
    expect(tree.body).toBe(envelope(toTree(rows).map(ordered)));
    const list = await read('/system/dept-api/list');
    expect(Number(list.headers['content-length'])).toBe(list.rawPayload.length);
    expect(list.body).toBe(envelope(rows.map(ordered)));
    // Served again from the cache, chunk by chunk, the same bytes.
    expect((await read('/system/dept-api/tree')).body).toBe(tree.body);
  });

  it('is written again by later builds only once no request still reads it', async () => {
    const big = await bigTenant();
    const cache = new ChartCache(64 * 2 ** 20);
    const version = () => chartVersion(t.appSql, big.tenantId);
    const rename = (name: string) =>
      t.sql`
        WITH renamed AS (UPDATE sys_dept SET dept_name = ${name} || ' ' || dept_id WHERE tenant_id = ${big.tenantId} AND parent_id = 0)
        ${chartBump(t.sql, big.tenantId)}
        SELECT 1`;
    const held = await cache.get(t.appSql, big.tenantId, await version(), 'tree', {});
    expect(held.body.length).toBeGreaterThan(1);
    const sent = Buffer.concat(held.body);
    // Two newer versions built while the first is still being sent: its chunks are not among those written.
    for (const name of ['Renamed 1', 'Renamed 2']) {
      await rename(name);
      const next = await cache.get(t.appSql, big.tenantId, await version(), 'tree', {});
      expect(Buffer.concat(next.body).toString()).toContain(`"deptName":"${name} `);
      expect(Buffer.concat(held.body).equals(sent)).toBe(true);
      next.release();
    }
    // Sent: the next build writes into its chunks (the held body now shows other bytes), and its answer is whole.
    held.release();
    held.release(); // a second call changes nothing
    await rename('Renamed 3');
    const after = await cache.get(t.appSql, big.tenantId, await version(), 'tree', {});
    expect(Buffer.concat(held.body).equals(sent)).toBe(false);
    const rows = await listDepts(t.appSql, big.tenantId, {});
    expect(Buffer.concat(after.body).toString()).toBe(envelope(toTree(rows).map(ordered)));
  });
});

describe('ChartCache', () => {
  it('stays within its byte budget, evicts the least recently used, keeps one version per chart', async () => {
    const tree = await new ChartCache(2 ** 20).get(t.appSql, tenantId, '0', 'tree', {});
    const budget = Math.floor(tree.bytes * 2.5);
    const cache = new ChartCache(budget);
    const version = await chartVersion(t.appSql, tenantId);
    await cache.get(t.appSql, tenantId, version, 'tree', {});
    await cache.get(t.appSql, tenantId, version, 'list', {});
    expect(cache.size.entries).toBe(2);
    await cache.get(t.appSql, tenantId, version, 'tree', {}); // a hit: now the most recent
    await cache.get(t.appSql, tenantId, version, 'list', { status: '0' });
    // Three charts of about the tree's size do not fit in 2.5 of them: the list went first.
    expect(cache.size.bytes).toBeLessThanOrEqual(budget);
    expect(cache.size.entries).toBe(2);
    // A write makes a new version; its chart replaces the old one instead of sitting beside it.
    await create();
    const next = await cache.get(t.appSql, tenantId, await chartVersion(t.appSql, tenantId), 'tree', {});
    expect(next.etag).not.toBe(tree.etag);
    expect(cache.size.entries).toBe(2);
    // A chart larger than the whole budget is served but not kept.
    const tiny = new ChartCache(10);
    expect((await tiny.get(t.appSql, tenantId, '0', 'tree', {})).bytes).toBeGreaterThan(10);
    expect(tiny.size).toEqual({ entries: 0, bytes: 0 });
  });
});
