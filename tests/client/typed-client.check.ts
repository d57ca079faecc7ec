// Type-checked by CI (`npm run openapi`), never run. It uses the types that
// openapi-typescript generates from /openapi.json (into .openapi/api.d.ts)
// the way a client would, so it stops compiling when the document loses a
// name, an operation or a shape that clients rely on.
import type { components, operations, paths } from '../../.openapi/api.js';

type Schemas = components['schemas'];
type JsonBody<Op> = Op extends { requestBody: { content: { 'application/json': infer Body } } } ? Body : never;
type JsonOk<Op> = Op extends { responses: { 200: { content: { 'application/json': infer Ok } } } } ? Ok : never;

/** A fetch wrapper typed by the generated operations; a real client would use openapi-fetch or similar. */
async function call<Op>(method: string, path: keyof paths | string, body?: JsonBody<Op>, token?: string): Promise<JsonOk<Op>> {
  const response = await fetch(`http://localhost:8080${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return (await response.json()) as JsonOk<Op>;
}

export async function session(): Promise<void> {
  const login = await call<operations['login']>('POST', '/auth/login', { tenantId: '000000', username: 'admin', password: 'change-me' });
  const token: string = login.data.access_token;
  const expiresIn: number = login.data.expires_in;

  const created = await call<operations['createDept']>('POST', '/system/dept-api', { parentId: 100, deptName: 'Sales', orderNum: 1 }, token);
  const nothing: null = created.data;

  const dept: Schemas['Dept'] = (await call<operations['getDept']>('GET', '/system/dept-api/101', undefined, token)).data;
  const path: string = dept.ancestors;
  const leader: string | null = dept.leader;
  const status: '0' | '1' = dept.status;

  const tree: Schemas['DeptNode'][] = (await call<operations['deptTree']>('GET', '/system/dept-api/tree', undefined, token)).data;
  const firstChild: Schemas['DeptNode'] | undefined = tree[0]?.children[0];

  const update: Schemas['DeptUpdate'] = { deptId: dept.deptId, parentId: 0, deptName: dept.deptName };
  await call<operations['updateDept']>('PUT', '/system/dept-api', update, token);
  await call<operations['deleteDepts']>('DELETE', '/system/dept-api/101,102', undefined, token);

  const page = (await call<operations['listTenants']>('GET', '/system/tenant-api/list?pageNum=1', undefined, token)).data;
  const total: number = page.total;
  const tenant: Schemas['Tenant'] | undefined = page.rows[0];
  const quota: Schemas['QuotaBo'] | undefined = tenant?.quotaBo;
  const menus: Schemas['PackageBo']['menuIds'] | undefined = tenant?.packageBo.menuIds;
  const rule: Schemas['RuleBo']['modelZr'] | undefined = tenant?.ruleBo.modelZr;

  const newUser: Schemas['UserCreate'] = { userName: 'li.lei', password: 'secret-password', roles: ['user'] };
  const user: Schemas['User'] = (await call<operations['getUser']>('GET', '/system/user-api/7', undefined, token)).data;
  const me = (await call<operations['me']>('GET', '/auth/me', undefined, token)).data;
  const failure: Schemas['ErrorEnvelope'] = { code: 404, msg: 'Department 4711 not found', data: null };

  // Shapes the document must refuse:
  // @ts-expect-error deptName is required on create
  const noName: Schemas['DeptCreate'] = { parentId: 0 };
  // @ts-expect-error status is "0" or "1"
  const badStatus: Schemas['Dept']['status'] = '2';
  // @ts-expect-error a user as read never carries its password
  const leaked: string = user.password;
  // @ts-expect-error an error's data is null
  const errorData: Schemas['ErrorEnvelope']['data'] = {};

  void [expiresIn, nothing, path, leader, status, firstChild, total, quota, menus, rule, newUser, me, failure];
  void [noName, badStatus, leaked, errorData];
}
