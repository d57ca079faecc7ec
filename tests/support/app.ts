import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { AuditOptions } from '../../src/audit/audit.plugin.js';
import type { Sql } from '../../src/db/database.js';
import { ADMIN_PASSWORD } from './constants.js';
import { openTestDatabase } from './test-database.js';

export { ADMIN_PASSWORD };

export interface Reply<T = unknown> {
  status: number;
  body: { code: number; msg: string; data: T };
  headers: Record<string, string | string[] | number | undefined>;
}

/** HTTP calls as one signed-in user (or none): every call goes through app.inject. */
export class Client {
  constructor(
    readonly app: FastifyInstance,
    readonly token?: string,
  ) {}

  async request<T = any>(method: InjectOptions['method'], url: string, payload?: unknown): Promise<Reply<T>> {
    const res = await this.app.inject({
      method,
      url,
      ...(payload === undefined ? {} : { payload: payload as InjectOptions['payload'] }),
      headers: this.token ? { authorization: `Bearer ${this.token}` } : {},
    });
    return { status: res.statusCode, body: res.json(), headers: res.headers };
  }
  get<T = any>(url: string) {
    return this.request<T>('GET', url);
  }
  post<T = any>(url: string, body: unknown = {}) {
    return this.request<T>('POST', url, body);
  }
  put<T = any>(url: string, body: unknown) {
    return this.request<T>('PUT', url, body);
  }
  delete<T = any>(url: string) {
    return this.request<T>('DELETE', url);
  }
}

export interface TestApp {
  app: FastifyInstance;
  sql: Sql;
  kind: string;
  /** Anonymous client. */
  anon: Client;
  /** The bootstrap superadmin of tenant 000000. */
  root: Client;
  login(tenantId: string, username: string, password: string): Promise<Client>;
  close(): Promise<void>;
}

/** Id from the Location header a create answers with. */
export function createdId(reply: Reply): number {
  const location = String(reply.headers.location ?? '');
  const id = Number(location.split('/').pop());
  if (reply.status !== 200 || !Number.isInteger(id)) {
    throw new Error(`create failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  }
  return id;
}

/**
 * A migrated, bootstrapped database of its own (a copy of the run's template,
 * tests/support/test-database.ts) and the app on it, with the superadmin signed in.
 */
export async function buildTestApp(
  options: { tokenTtl?: number; audit?: AuditOptions; sessionCacheMs?: number; requestDeadlineMs?: number } = {},
): Promise<TestApp> {
  const db = await openTestDatabase();
  const app = await buildApp({
    sql: db.sql,
    config: { jwtSecret: undefined, tokenTtl: options.tokenTtl ?? 7200, logLevel: 'silent' },
    logger: false,
    audit: options.audit,
    sessionCacheMs: options.sessionCacheMs,
    requestDeadlineMs: options.requestDeadlineMs,
  });
  await app.ready();
  const anon = new Client(app);
  const login = async (tenantId: string, username: string, password: string) => {
    const res = await anon.post('/auth/login', { tenantId, username, password });
    if (res.status !== 200) throw new Error(`login ${tenantId}/${username} failed: ${JSON.stringify(res.body)}`);
    return new Client(app, res.body.data.access_token);
  };
  const root = await login('000000', 'admin', ADMIN_PASSWORD);
  return {
    app,
    sql: db.sql,
    kind: db.kind,
    anon,
    root,
    login,
    async close() {
      await app.close();
      await db.close();
    },
  };
}

let userSeq = 0;

/** Creates a user through the API as `admin` (a tenant admin client) and signs it in. */
export async function createUserAndLogin(
  t: TestApp,
  admin: Client,
  tenantId: string,
  role: 'admin' | 'user',
  extra: Record<string, unknown> = {},
): Promise<{ client: Client; userId: number; userName: string; password: string }> {
  const userName = `${role}${++userSeq}_${Math.random().toString(36).slice(2, 8)}`;
  const password = 'password-123';
  const res = await admin.post('/system/user-api', { userName, password, roles: [role], ...extra });
  const userId = createdId(res);
  return { client: await t.login(tenantId, userName, password), userId, userName, password };
}
