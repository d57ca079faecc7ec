import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createdId, type TestApp } from './support/app.js';

// /openapi.json is a document clients can generate from: named
// operations and schemas, every status described with a right example,
// public routes without security, Location on creates, write-only
// passwords, canonical paths without trailing slashes.

interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { name: string; in: string; description?: string }[];
  responses: Record<string, { description: string; headers?: Record<string, unknown>; content?: Record<string, { example?: unknown }> }>;
}

let t: TestApp;
let spec: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, any> } };
const operations = () => Object.entries(spec.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));
const byId = (id: string) => operations().find(({ op }) => op.operationId === id)!;

beforeAll(async () => {
  t = await buildTestApp();
  spec = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
});
afterAll(async () => t?.close());

describe('the OpenAPI document', () => {
  it('names, summarises and tags every operation, with unique operationIds', () => {
    const ids = operations().map(({ op }) => op.operationId);
    expect(ids.length).toBeGreaterThanOrEqual(20);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, method, op } of operations()) {
      expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
      expect(op.summary, `${method} ${path}`).toBeTruthy();
      expect(op.tags?.length, `${method} ${path}`).toBeGreaterThan(0);
    }
  });

  it('has canonical paths: no trailing slash, no two templates for one path', () => {
    const paths = Object.keys(spec.paths);
    expect(paths).toEqual(expect.arrayContaining(['/system/dept-api', '/system/user-api', '/system/tenant-api']));
    for (const path of paths) expect(path === '/' || !path.endsWith('/'), path).toBe(true);
    const shapes = paths.map((path) => path.replace(/\{[^}]+\}/g, '{}'));
    expect(new Set(shapes).size).toBe(shapes.length);
    const remove = byId('deleteDepts');
    expect(remove.path).toBe('/system/dept-api/{id}');
    expect(remove.op.parameters?.[0]).toMatchObject({ name: 'id', in: 'path', description: expect.stringMatching(/comma-separated/) });
  });

  it('names the component schemas clients use', () => {
    expect(Object.keys(spec.components.schemas)).toEqual(
      expect.arrayContaining([
        'Dept',
        'DeptNode',
        'DeptCreate',
        'DeptUpdate',
        'User',
        'UserCreate',
        'UserUpdate',
        'Tenant',
        'TenantCreate',
        'TenantUpdate',
        'TenantPage',
        'PackageBo',
        'QuotaBo',
        'RuleBo',
        'LoginBody',
        'LoginResult',
        'Me',
        'SuccessEnvelope',
        'ErrorEnvelope',
      ]),
    );
    expect(Object.keys(spec.components.schemas).filter((name) => name.startsWith('def-'))).toEqual([]);
    expect(spec.components.schemas.Tenant.properties.quotaBo).toEqual({ $ref: '#/components/schemas/QuotaBo' });
  });

  it('marks the public operations (login, health) with an empty security list; the rest need the bearer token', () => {
    for (const id of ['login', 'health', 'ready']) expect(byId(id).op.security, id).toEqual([]);
    for (const id of ['me', 'createDept', 'listTenants']) expect(byId(id).op.security, id).toBeUndefined();
    expect((spec as unknown as { security: unknown }).security).toEqual([{ bearer: [] }]);
  });

  it('describes every status, with examples: data null where it is null, code equal to the status', () => {
    for (const { path, method, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        expect(response.description, `${method} ${path} ${status}`).not.toMatch(/^(Default Response)?$/);
        if (status === '200') continue;
        // 304 Not Modified (dept list and tree) has no body by definition, nor do the redirects of the SSO flow.
        if (status === '304' || status === '302' || status === '303') {
          expect(response.content, `${method} ${path} ${status}`).toBeUndefined();
          continue;
        }
        expect(response.content?.['application/json']?.example, `${method} ${path} ${status}`).toEqual({
          code: Number(status),
          msg: expect.any(String),
          data: null,
        });
      }
    }
    expect(byId('updateDept').op.responses['200']!.content!['application/json']!.example).toEqual({ code: 200, msg: 'success', data: null });
  });

  it('documents the Location header of every create', () => {
    for (const id of ['createDept', 'createUser', 'createTenant']) {
      expect(byId(id).op.responses['200']!.headers, id).toHaveProperty('location');
    }
  });

  it('marks passwords and the provisioned username write-only', () => {
    const { schemas } = spec.components;
    expect(schemas.UserCreate.properties.password.writeOnly).toBe(true);
    expect(schemas.UserUpdate.properties.password.writeOnly).toBe(true);
    expect(schemas.TenantCreate.properties.password.writeOnly).toBe(true);
    expect(schemas.TenantCreate.properties.username.writeOnly).toBe(true);
    expect(schemas.LoginBody.properties.password.writeOnly).toBe(true);
    expect(schemas.User.properties).not.toHaveProperty('password');
  });
});

describe('paths with a trailing slash', () => {
  it('still route to the same operations', async () => {
    const created = await t.root.post('/system/dept-api/', { parentId: 100, deptName: 'Slash' });
    const id = createdId(created);
    expect(created.headers.location).toBe(`/system/dept-api/${id}`);
    expect((await t.root.get(`/system/dept-api/${id}/`)).body.data.deptName).toBe('Slash');
    expect((await t.root.get('/system/dept-api/list/')).status).toBe(200);
    expect((await t.root.put('/system/dept-api/', { deptId: id, parentId: 100, deptName: 'Slash 2' })).status).toBe(200);
    expect((await t.root.delete(`/system/dept-api/${id}/`)).status).toBe(200);
    expect((await t.root.get('/system/tenant-api/list/')).status).toBe(200);
  });
});
