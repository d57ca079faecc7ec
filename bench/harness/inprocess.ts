// The app in the bench's own process, driven through app.inject: a fresh
// database (DATABASE_URL's server when set, else the embedded PGlite),
// migrated and bootstrapped, and the platform admin signed in. A fresh
// PostgreSQL database is dropped by close(), or on an interrupt.

import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp, type AppOptions } from '../../src/app.js';
import { bootstrap } from '../../src/bootstrap.js';
import { openEmbedded, openPostgres, type Database } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { ADMIN_PASSWORD, createDatabase } from './database.js';
import { cleanupOnInterrupt } from './processes.js';

export interface InProcess {
  db: Database;
  app: FastifyInstance;
  /** One request as the platform admin; anything but 200 fails the run. */
  call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** `name` prefixes the fresh PostgreSQL database's name; `webhooks` as buildApp takes it. */
export async function openInProcess(name: string, webhooks?: AppOptions['webhooks']): Promise<InProcess> {
  const url = process.env.DATABASE_URL;
  const created = url ? await createDatabase(url, name) : undefined;
  if (created) cleanupOnInterrupt(created.drop);
  const db = created ? openPostgres(created.url, { max: 10 }) : await openEmbedded(undefined);
  await migrate(db.sql);
  await bootstrap(db.sql, ADMIN_PASSWORD);
  const app = await buildApp({
    sql: db.sql,
    config: { jwtSecret: undefined, tokenTtl: 3600, logLevel: 'silent' },
    logger: false,
    webhooks,
  });
  await app.ready();
  const inject = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, payload?: object, token?: string) => {
    const res = await app.inject({ method, url: path, payload, headers: token ? { authorization: `Bearer ${token}` } : {} });
    if (res.statusCode !== 200) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body}`);
    return res;
  };
  const login = await inject('POST', '/auth/login', { tenantId: '000000', username: 'admin', password: ADMIN_PASSWORD });
  const token = (login.json() as { data: { access_token: string } }).data.access_token;
  return {
    db,
    app,
    call: (method, path, payload) => inject(method, path, payload, token),
    async close() {
      await app.close();
      await db.close();
      await created?.drop();
    },
  };
}
