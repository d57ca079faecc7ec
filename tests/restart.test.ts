import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { bootstrap } from '../src/bootstrap.js';
import { openEmbedded } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { Client } from './support/app.js';

// The embedded database keeps its data in DATA_DIR: a department created
// before a restart is there after it, and the restart neither re-runs
// migrations nor bootstraps a second admin.

async function start(dir: string) {
  const db = await openEmbedded(dir);
  const applied = await migrate(db.sql);
  const boot = await bootstrap(db.sql, undefined);
  const app = await buildApp({ sql: db.sql, config: { jwtSecret: undefined, tokenTtl: 600, logLevel: 'silent' }, logger: false });
  return { db, app, applied, boot };
}

describe('embedded database across a restart', () => {
  it('keeps data, migrations, the generated admin password and the JWT secret', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dept-restart-'));
    try {
      const first = await start(dir);
      expect(first.applied.length).toBeGreaterThan(0);
      const password = first.boot.generatedPassword;
      expect(password).toBeTruthy();
      const login = await new Client(first.app).post('/auth/login', { tenantId: '000000', username: 'admin', password });
      const token = login.body.data.access_token as string;
      const admin = new Client(first.app, token);
      const created = await admin.post('/system/dept-api', { parentId: 0, deptName: 'Survivor' });
      expect(created.status).toBe(200);
      const id = Number(String(created.headers.location).split('/').pop());
      await first.app.close();
      await first.db.close();

      const second = await start(dir);
      try {
        expect(second.applied).toEqual([]);
        expect(second.boot.generatedPassword).toBeUndefined();
        // The token issued before the restart still verifies: the secret lives in the database.
        const again = new Client(second.app, token);
        const res = await again.get(`/system/dept-api/${id}`);
        expect(res.status).toBe(200);
        expect(res.body.data.deptName).toBe('Survivor');
      } finally {
        await second.app.close();
        await second.db.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
