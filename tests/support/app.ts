import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp, type AppOptions } from '../../src/app.js';
import type { AuditOptions } from '../../src/audit/audit.plugin.js';
import type { Sql } from '../../src/db/database.js';
import { ADMIN_PASSWORD } from './constants.js';
import { openTestDatabase, type TestDatabase } from './test-database.js';

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

  async request<T = any>(method: InjectOptions['method'], url: string, payload?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
    const res = await this.app.inject({
      method,
      url,
      ...(payload === undefined ? {} : { payload: payload as InjectOptions['payload'] }),
      headers: { ...headers, ...(this.token ? { authorization: `Bearer ${this.token}` } : {}) },
    });
    return { status: res.statusCode, body: res.json(), headers: res.headers };
  }
  get<T = any>(url: string) {
    return this.request<T>('GET', url);
  }
  post<T = any>(url: string, body: unknown = {}, headers?: Record<string, string>) {
    return this.request<T>('POST', url, body, headers);
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
  /** The tests' own pool, for setup and assertions; not recorded. */
  sql: Sql;
  /**
   * The server itself under TEST_POOLER_URL (else the same pool as sql): for a
   * test that must look at the database while the pooler's few server
   * connections are all taken.
   */
  direct: Sql;
  /** The pool the app uses: pass it to any other app or service function a test runs, so the run records and checks its statements. */
  appSql: Sql;
  /** The exchange counters of appSql's Database (buildApp's `exchanges`). */
  appExchanges: TestDatabase['appExchanges'];
  kind: string;
  /** PostgreSQL: connections of another process on the same database (secondNode). */
  connectAgain: TestDatabase['connectAgain'];
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
  options: {
    tokenTtl?: number;
    audit?: AuditOptions;
    sessionCacheMs?: number;
    requestDeadlineMs?: number;
    /** The app pool's client-side statement deadline instead of the service's 5 s (src/db/database.ts), where it has one. */
    statementDeadlineMs?: number;
    webhooks?: AppOptions['webhooks'];
    /** Configuration beyond the defaults below (PUBLIC_URL, the outbound allow-list, ...). */
    config?: Partial<AppOptions['config']>;
  } = {},
): Promise<TestApp> {
  const db = await openTestDatabase();
  if (options.statementDeadlineMs !== undefined && db.appDeadline.ms > 0) db.appDeadline.ms = options.statementDeadlineMs;
  const app = await buildApp({
    sql: db.appSql,
    directSql: db.appDirect,
    exchanges: db.appExchanges,
    config: { jwtSecret: undefined, tokenTtl: options.tokenTtl ?? 7200, logLevel: 'silent', ...options.config },
    logger: (process.env.TEST_APP_LOG ? { level: process.env.TEST_APP_LOG } : false) as false,
    audit: options.audit,
    sessionCacheMs: options.sessionCacheMs,
    requestDeadlineMs: options.requestDeadlineMs,
    webhooks: options.webhooks,
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
    direct: db.direct,
    appSql: db.appSql,
    appExchanges: db.appExchanges,
    kind: db.kind,
    connectAgain: db.connectAgain,
    anon,
    root,
    login,
    async close() {
      await app.close();
      await db.close();
    },
  };
}

/** Another node of the service (secondNode). */
export interface Node {
  app: FastifyInstance;
  sql: Sql;
  close(): Promise<void>;
}

/**
 * A second node on t's database, for the tests of what holds across nodes
 * (the audit stream, the change feed, cache invalidation, lockout). On
 * PostgreSQL it has its own pool and its own direct connection for LISTEN, as
 * a second process would (through the pooler under TEST_POOLER_URL), so
 * nothing can pass between the nodes inside this process. On PGlite it shares
 * t's one connection: one process owns that database.
 */
export async function secondNode(t: TestApp, options: Partial<Omit<AppOptions, 'sql' | 'directSql'>> = {}): Promise<Node> {
  const db = t.connectAgain?.(10);
  const app = await buildApp({
    config: { jwtSecret: undefined, tokenTtl: 7200, logLevel: 'silent' },
    logger: false,
    ...options,
    sql: db?.sql ?? t.appSql,
    directSql: db?.direct ?? t.appSql,
    exchanges: db?.exchanges ?? t.appExchanges,
  });
  await app.ready();
  return {
    app,
    sql: db?.sql ?? t.appSql,
    async close() {
      await app.close();
      await db?.close();
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
