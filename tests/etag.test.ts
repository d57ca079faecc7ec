import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createdId, type Client, type TestApp } from './support/app.js';
import { expectTreeInvariants } from './support/invariants.js';
import { createTenant, tenantBody, writable } from './support/tenant-fixtures.js';

// docs/api-rules.md#concurrency-control: GET of one department, user or tenant carries a strong ETag
// that changes whenever the record changes; PUT and single-id DELETE honour
// If-Match (412 when stale, nothing changed); without it they behave as before.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

async function send(as: Client, method: 'GET' | 'PUT' | 'DELETE', url: string, ifMatch?: string, payload?: unknown) {
  const res = await t.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${as.token}`, ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }) },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: res.statusCode, body: res.json(), etag: res.headers.etag as string | undefined };
}

/** One resource as the tests see it: how to make one, its URL, and two different full replacements. */
interface Kind {
  name: string;
  make(): Promise<{ url: string; id: string | number; put(variant: string): Record<string, unknown> }>;
  putUrl: string;
}

const kinds: Kind[] = [
  {
    name: 'department',
    putUrl: '/system/dept-api',
    async make() {
      const id = createdId(await t.root.post('/system/dept-api', { parentId: 0, deptName: `E${Math.random().toString(36).slice(2, 9)}` }));
      return { url: `/system/dept-api/${id}`, id, put: (v) => ({ deptId: id, parentId: 0, deptName: `E${id}`, leader: v }) };
    },
  },
  {
    name: 'user',
    putUrl: '/system/user-api',
    async make() {
      const userName = `e${Math.random().toString(36).slice(2, 9)}`;
      const id = createdId(await t.root.post('/system/user-api', { userName, password: 'password-123', roles: ['user'] }));
      return { url: `/system/user-api/${id}`, id, put: (v) => ({ userId: id, userName, roles: ['user'], nickName: v }) };
    },
  },
  {
    name: 'tenant',
    putUrl: '/system/tenant-api',
    async make() {
      const dto = await createTenant(t.root, tenantBody());
      return { url: `/system/tenant-api/${dto.id}`, id: dto.id, put: (v) => ({ ...writable(dto), id: dto.id, tenantName: v }) };
    },
  },
];

describe.each(kinds)('ETag and If-Match on one $name', (kind) => {
  it('GET answers a strong ETag that stays while the record stays and changes when it changes', async () => {
    const r = await kind.make();
    const first = await send(t.root, 'GET', r.url);
    expect(first.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect((await send(t.root, 'GET', r.url)).etag).toBe(first.etag);
    expect((await send(t.root, 'PUT', kind.putUrl, undefined, r.put('changed'))).status).toBe(200);
    expect((await send(t.root, 'GET', r.url)).etag).not.toBe(first.etag);
  });

  it('PUT with a stale If-Match is 412 and changes nothing; current, * and none succeed', async () => {
    const r = await kind.make();
    const stale = (await send(t.root, 'GET', r.url)).etag!;
    expect((await send(t.root, 'PUT', kind.putUrl, stale, r.put('one'))).status).toBe(200);
    const after = await send(t.root, 'GET', r.url);

    const refused = await send(t.root, 'PUT', kind.putUrl, stale, r.put('two'));
    expect(refused.status).toBe(412);
    expect(refused.body).toMatchObject({ code: 412, data: null });
    expect(refused.body.msg).toContain('If-Match');
    expect(await send(t.root, 'GET', r.url)).toEqual(after);
    // A weak tag never matches under If-Match's strong comparison.
    expect((await send(t.root, 'PUT', kind.putUrl, `W/${after.etag}`, r.put('two'))).status).toBe(412);

    expect((await send(t.root, 'PUT', kind.putUrl, `"other", ${after.etag}`, r.put('three'))).status).toBe(200);
    expect((await send(t.root, 'PUT', kind.putUrl, '*', r.put('four'))).status).toBe(200);
    expect((await send(t.root, 'PUT', kind.putUrl, undefined, r.put('five'))).status).toBe(200);
  });

  it('two PUTs sent at once with the same ETag: exactly one 200 and one 412', async () => {
    for (let round = 0; round < 3; round++) {
      const r = await kind.make();
      const etag = (await send(t.root, 'GET', r.url)).etag!;
      const results = await Promise.all([
        send(t.root, 'PUT', kind.putUrl, etag, r.put('from client A')),
        send(t.root, 'PUT', kind.putUrl, etag, r.put('from client B')),
      ]);
      expect(results.map((x) => x.status).sort()).toEqual([200, 412]);
    }
  });

  it('DELETE with a stale If-Match is 412 and the record stays; with the current one it goes', async () => {
    const r = await kind.make();
    const stale = (await send(t.root, 'GET', r.url)).etag!;
    await send(t.root, 'PUT', kind.putUrl, undefined, r.put('moved on'));
    const refused = await send(t.root, 'DELETE', r.url, stale);
    expect(refused.status).toBe(412);
    const current = await send(t.root, 'GET', r.url);
    expect(current.status).toBe(200);
    expect((await send(t.root, 'DELETE', r.url, current.etag)).status).toBe(200);
    expect((await send(t.root, 'GET', r.url)).status).toBe(404);
  });
});

describe('If-Match on a multi-id DELETE', () => {
  it('is 400 unless it is *, which only asks that every id be live', async () => {
    const a = createdId(await t.root.post('/system/dept-api', { parentId: 0, deptName: 'Multi A' }));
    const b = createdId(await t.root.post('/system/dept-api', { parentId: 0, deptName: 'Multi B' }));
    const etag = (await send(t.root, 'GET', `/system/dept-api/${a}`)).etag!;
    const refused = await send(t.root, 'DELETE', `/system/dept-api/${a},${b}`, etag);
    expect(refused.status).toBe(400);
    expect(refused.body.msg).toContain('If-Match');
    expect((await send(t.root, 'GET', `/system/dept-api/${b}`)).status).toBe(200);
    expect((await send(t.root, 'DELETE', `/system/dept-api/${a},${b}`, '*')).status).toBe(200);
    await expectTreeInvariants(t.sql);
  });
});

describe('the OpenAPI document', () => {
  it('declares 412 on PUT and DELETE of departments, users and tenants', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of ['/system/dept-api', '/system/user-api', '/system/tenant-api']) {
      expect(Object.keys(doc.paths[path].put.responses)).toContain('412');
    }
    expect(Object.keys(doc.paths['/system/dept-api/{id}'].delete.responses)).toContain('412');
    expect(Object.keys(doc.paths['/system/user-api/{id}'].delete.responses)).toContain('412');
    expect(Object.keys(doc.paths['/system/tenant-api/{id}'].delete.responses)).toContain('412');
  });
});
