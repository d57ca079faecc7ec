import type { FastifyInstance } from 'fastify';
import { afterAll, expect } from 'vitest';
import { buildTestApp, Client, type TestApp } from './app.js';
import { createTenantWithAdmin, type TenantWithAdmin } from './tenant-fixtures.js';

// A SCIM client for the tests (docs/scim.md): requests to /scim/v2 through
// app.inject, as an identity provider sends them (application/scim+json,
// a Bearer API key), answers parsed from JSON.

/** The URNs the tests write and expect, spelt out here rather than taken from src/, so a misspelt one there fails. */
export const URN = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  enterprise: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  dept: 'urn:ietf:params:scim:schemas:extension:dept:2.0:Group',
  error: 'urn:ietf:params:scim:api:messages:2.0:Error',
  list: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  patch: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
};

export interface ScimReply {
  status: number;
  body: any;
  headers: Record<string, string | string[] | number | undefined>;
}

let keys = 0;

export class ScimClient {
  readonly app: FastifyInstance;
  constructor(
    readonly as: Client,
    readonly keyName = '',
    readonly keyId = 0,
  ) {
    this.app = as.app;
  }

  /** A new API key of `role` made by `admin`, and a client that sends it. */
  static async forTenant(admin: Client, role: 'admin' | 'user' = 'admin'): Promise<ScimClient> {
    const name = `scim-${++keys}-${Math.random().toString(36).slice(2, 7)}`;
    const res = await admin.post('/system/apikey-api', { name, role });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return new ScimClient(new Client(admin.app, res.body.data.key), name, res.body.data.id);
  }

  async raw(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    payload?: string,
    contentType = 'application/scim+json',
    ifMatch?: string,
    headers: Record<string, string> = {},
  ): Promise<ScimReply> {
    const res = await this.app.inject({
      method,
      url: `/scim/v2${path}`,
      ...(payload === undefined ? {} : { payload }),
      headers: {
        ...(this.as.token ? { authorization: `Bearer ${this.as.token}` } : {}),
        ...(payload === undefined ? {} : { 'content-type': contentType }),
        ...(ifMatch ? { 'if-match': ifMatch } : {}),
        ...headers,
      },
    });
    return { status: res.statusCode, body: res.body === '' ? undefined : res.json(), headers: res.headers };
  }

  get(path: string) {
    return this.raw('GET', path);
  }
  post(path: string, body: unknown, contentType?: string) {
    return this.raw('POST', path, JSON.stringify(body), contentType);
  }
  put(path: string, body: unknown, ifMatch?: string) {
    return this.raw('PUT', path, JSON.stringify(body), undefined, ifMatch);
  }
  /** A PatchOp body with these Operations. */
  patch(path: string, operations: unknown[], ifMatch?: string) {
    return this.raw('PATCH', path, JSON.stringify({ schemas: [URN.patch], Operations: operations }), undefined, ifMatch);
  }
  delete(path: string, ifMatch?: string) {
    return this.raw('DELETE', path, undefined, undefined, ifMatch);
  }
}

/**
 * Each SCIM test file's start, awaited at its top: a test app, a tenant with
 * its admin signed in, and a SCIM client with an admin key of that tenant.
 * The app closes after the file's tests (or at once, if the tenant or the key
 * cannot be made).
 */
export async function scimTenant(): Promise<{ t: TestApp; tenant: TenantWithAdmin; scim: ScimClient }> {
  const t = await buildTestApp();
  try {
    const tenant = await createTenantWithAdmin(t);
    const scim = await ScimClient.forTenant(tenant.admin);
    afterAll(async () => t.close());
    return { t, tenant, scim };
  } catch (error) {
    await t.close();
    throw error;
  }
}
