import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './support/app.js';

// docs/api-rules.md#requests-and-answers: every response, whatever happened, is {code, msg, data} as
// JSON, with the HTTP status equal to code, and carries X-Request-Id.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

async function raw(options: InjectOptions) {
  const res = await t.app.inject(options);
  return { status: res.statusCode, headers: res.headers, body: res.body, json: () => JSON.parse(res.body) };
}

function expectEnvelope(res: Awaited<ReturnType<typeof raw>>, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['x-request-id']).toBeTruthy();
  const body = res.json();
  expect(Object.keys(body).sort()).toEqual(['code', 'data', 'msg']);
  expect(body.code).toBe(status);
  expect(typeof body.msg).toBe('string');
  if (status !== 200) {
    expect(body.data).toBeNull();
    expect(body.msg.length).toBeGreaterThan(0);
    expect(body.msg).not.toMatch(/at .*\.ts:\d+|SELECT|INSERT|stack/i);
  }
  return body;
}

describe('envelope', () => {
  const auth = () => ({ authorization: `Bearer ${t.root.token}` });

  it('wraps success with code 200 and msg "success"', async () => {
    const body = expectEnvelope(await raw({ method: 'GET', url: '/system/dept-api/list', headers: auth() }), 200);
    expect(body.msg).toBe('success');
    expect(Array.isArray(body.data)).toBe(true);
  });

  it('answers null data on writes', async () => {
    const body = expectEnvelope(
      await raw({ method: 'POST', url: '/system/dept-api', headers: auth(), payload: { parentId: 0, deptName: 'Env' } }),
      200,
    );
    expect(body.data).toBeNull();
  });

  it('400 for schema violations, naming the field', async () => {
    const body = expectEnvelope(
      await raw({ method: 'POST', url: '/system/dept-api', headers: auth(), payload: { parentId: 0, deptName: 'x', orderNum: -1 } }),
      400,
    );
    expect(body.msg).toContain('orderNum');
  });

  it('400 for malformed JSON', async () => {
    const body = expectEnvelope(
      await raw({ method: 'POST', url: '/system/dept-api', headers: { ...auth(), 'content-type': 'application/json' }, payload: '{"parentId":' }),
      400,
    );
    expect(body.msg).toMatch(/JSON/);
  });

  it('401 without a token', async () => {
    expectEnvelope(await raw({ method: 'GET', url: '/system/dept-api/list' }), 401);
  });

  it('403 for a role without the permission', async () => {
    const { createUserAndLogin } = await import('./support/app.js');
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    const res = await t.app.inject({
      method: 'POST',
      url: '/system/dept-api',
      headers: { authorization: `Bearer ${user.client.token}` },
      payload: { parentId: 0, deptName: 'No' },
    });
    expectEnvelope({ status: res.statusCode, headers: res.headers, body: res.body, json: () => res.json() }, 403);
  });

  it('404 for a missing resource and for an unknown route', async () => {
    expectEnvelope(await raw({ method: 'GET', url: '/system/dept-api/999999', headers: auth() }), 404);
    expectEnvelope(await raw({ method: 'GET', url: '/no/such/route' }), 404);
    expectEnvelope(await raw({ method: 'PATCH', url: '/system/dept-api', headers: auth() }), 404);
  });

  it('409 for a conflict', async () => {
    await raw({ method: 'POST', url: '/system/dept-api', headers: auth(), payload: { parentId: 0, deptName: 'Twice' } });
    expectEnvelope(await raw({ method: 'POST', url: '/system/dept-api', headers: auth(), payload: { parentId: 0, deptName: 'Twice' } }), 409);
  });

  it('413 for a body over 1 MiB', async () => {
    const payload = JSON.stringify({ parentId: 0, deptName: 'x'.repeat(1024 * 1024) });
    expectEnvelope(await raw({ method: 'POST', url: '/system/dept-api', headers: { ...auth(), 'content-type': 'application/json' }, payload }), 413);
  });

  it('415 for a body that is not application/json', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      expectEnvelope(
        await raw({ method: 'POST', url: '/system/dept-api', headers: { ...auth(), 'content-type': type }, payload: 'parentId=0' }),
        415,
      );
    }
  });

  it('500 hides the cause and names the request id', async () => {
    const { buildApp } = await import('../src/app.js');
    const app = await buildApp({ sql: t.appSql, config: { jwtSecret: undefined, tokenTtl: 60, logLevel: 'silent' }, logger: false });
    app.get('/boom', { config: { public: true } }, async () => {
      throw new Error('secret detail from SELECT * FROM sys_user');
    });
    const res = await app.inject({ method: 'GET', url: '/boom' });
    await app.close();
    const body = expectEnvelope({ status: res.statusCode, headers: res.headers, body: res.body, json: () => res.json() }, 500);
    expect(body.msg).not.toContain('secret');
    expect(body.msg).toContain(String(res.headers['x-request-id']));
  });

  it('400 (not 500) for a NUL character anywhere a string goes', async () => {
    const json = { ...auth(), 'content-type': 'application/json' };
    expectEnvelope(await raw({ method: 'POST', url: '/system/dept-api', headers: json, payload: '{"parentId":0,"deptName":"nul\\u0000x"}' }), 400);
    expectEnvelope(await raw({ method: 'GET', url: '/system/dept-api/list?deptName=a%00b', headers: auth() }), 400);
    expectEnvelope(await raw({ method: 'GET', url: '/system/tenant-api/list?tenantName=a%00b', headers: auth() }), 400);
    const login = await raw({
      method: 'POST',
      url: '/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: '{"tenantId":"000000","username":"ad\\u0000min","password":"x"}',
    });
    expect(expectEnvelope(login, 400).msg).toMatch(/NUL/);
  });

  it('names a refused __proto__ key instead of calling the JSON invalid', async () => {
    const res = await raw({
      method: 'POST',
      url: '/system/dept-api',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: '{"parentId":0,"deptName":"p","__proto__":{"x":1}}',
    });
    expect(expectEnvelope(res, 400).msg).toMatch(/__proto__/);
  });

  it('treats an empty body sent with a JSON Content-Type as no body', async () => {
    const json = { ...auth(), 'content-type': 'application/json' };
    expectEnvelope(await raw({ method: 'DELETE', url: '/system/dept-api/999999', headers: json }), 404);
    expect(expectEnvelope(await raw({ method: 'POST', url: '/system/dept-api', headers: json }), 400).msg).toMatch(/body/);
    const { createUserAndLogin } = await import('./support/app.js');
    const user = await createUserAndLogin(t, t.root, '000000', 'user');
    const headers = { authorization: `Bearer ${user.client.token}`, 'content-type': 'application/json' };
    expectEnvelope(await raw({ method: 'POST', url: '/auth/logout', headers }), 200);
    expectEnvelope(await raw({ method: 'GET', url: '/auth/me', headers: { authorization: headers.authorization } }), 401);
  });

  it('accepts the Bearer scheme in any case', async () => {
    const res = await raw({ method: 'GET', url: '/auth/me', headers: { authorization: `bearer ${t.root.token}` } });
    expectEnvelope(res, 200);
  });

  it('replaces an X-Request-Id that is not a plain token', async () => {
    const res = await raw({ method: 'GET', url: '/healthz', headers: { 'x-request-id': '<script>alert(1)</script>' } });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('wraps a path with a broken percent-escape', async () => {
    for (const url of ['/system/tenant-api/%E0%A4%A', '/system/user-api/%ZZ', '/nope/%']) {
      const body = expectEnvelope(await raw({ method: 'GET', url, headers: auth() }), 400);
      expect(body.msg).toMatch(/percent-escape/);
    }
  });

  it('names the allowed values of an enumerated field, once', async () => {
    const res = await raw({ method: 'POST', url: '/system/dept-api', headers: auth(), payload: { parentId: 0, deptName: 'e', status: '2' } });
    const msg = expectEnvelope(res, 400).msg;
    expect(msg).toBe('Invalid input: body.status must be one of "0", "1"');
  });

  it('wraps errors of the HTTP parser itself, on a real socket', async () => {
    const { buildApp } = await import('../src/app.js');
    const { connect } = await import('node:net');
    const app = await buildApp({ sql: t.appSql, config: { jwtSecret: undefined, tokenTtl: 60, logLevel: 'silent' }, logger: false });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const send = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(request));
        let text = '';
        socket.on('data', (d) => (text += d));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
    try {
      const cases: [string, number][] = [
        [`GET /system/tenant-api/list?tenantName=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
        ['GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n', 400],
        ['FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 400],
      ];
      for (const [request, status] of cases) {
        const response = await send(request);
        const [head, body] = response.split('\r\n\r\n');
        expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
        expect(head).toMatch(/x-request-id: [0-9a-f-]{36}/i);
        expect(head).toMatch(/content-type: application\/json/i);
        const json = JSON.parse(body!);
        expect(json).toMatchObject({ code: status, data: null });
        expect(typeof json.msg).toBe('string');
      }
    } finally {
      await app.close();
    }
  });

  it('echoes a client X-Request-Id', async () => {
    const res = await raw({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-abc-123' } });
    expect(res.headers['x-request-id']).toBe('trace-abc-123');
    expectEnvelope(res, 200);
  });

  it('serves health, readiness and the OpenAPI document', async () => {
    expect(expectEnvelope(await raw({ method: 'GET', url: '/readyz' }), 200).data).toEqual({ status: 'ready' });
    const doc = await raw({ method: 'GET', url: '/openapi.json' });
    expect(doc.status).toBe(200);
    const spec = doc.json();
    expect(spec.openapi).toMatch(/^3\./);
    expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining(['/system/dept-api', '/system/dept-api/{id}', '/auth/login']));
    // The document shows what the wire carries: data inside the envelope.
    const ok = spec.paths['/system/dept-api/{id}'].get.responses['200'].content['application/json'].schema;
    expect(ok.allOf).toEqual([
      { $ref: '#/components/schemas/SuccessEnvelope' },
      { type: 'object', required: ['data'], properties: { data: { $ref: '#/components/schemas/Dept' } } },
    ]);
    expect(spec.components.schemas.SuccessEnvelope.properties).toEqual({
      code: { type: 'number', enum: [200] },
      msg: { type: 'string', enum: ['success'] },
    });
    const page = await raw({ method: 'GET', url: '/docs/' });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
  });
});
