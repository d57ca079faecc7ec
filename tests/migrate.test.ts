import { createHash } from 'node:crypto';
import { copyFile, mkdtemp, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEmbedded, openPostgres, type Database } from '../src/db/database.js';
import { checkSequence, migrate, MigrationError } from '../src/db/migrate.js';
import { bootstrap } from '../src/bootstrap.js';
import { run, serviceDatabase, startService, type ServiceDatabase } from './support/service.js';
import { openTestDatabase } from './support/test-database.js';

// sql/README.md: each applied migration is recorded with the sha256 of its
// file; a start on a database that ran a file with other bytes, or a file
// that is not there, is refused naming the file; rows from before the
// checksum get theirs on first sight; numbers are consecutive except the
// ones left out on purpose (003).

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

describe('migration numbering', () => {
  it('accepts the project’s own sql/ with 003 left out, and orders by number', async () => {
    const files = await readdir(new URL('../sql/', import.meta.url));
    expect(files.some((f) => f.startsWith('003_'))).toBe(false);
    const ordered = checkSequence(files);
    expect(ordered[0]).toBe('001_init.sql');
    expect(ordered).not.toContain('README.md');
    expect(checkSequence(['10_j.sql', '9_i.sql', ...Array.from({ length: 8 }, (_, i) => `${i + 1}_x.sql`)], new Set())).toEqual([
      ...Array.from({ length: 8 }, (_, i) => `${i + 1}_x.sql`),
      '9_i.sql',
      '10_j.sql',
    ]);
  });

  it('refuses a gap that is not listed, a number used twice, and a file taking a skipped number', () => {
    expect(() => checkSequence(['001_a.sql', '002_b.sql', '004_d.sql', '006_f.sql'])).toThrow(/no migration numbered 5 \(below 6\)/);
    expect(() => checkSequence(['001_a.sql', '002_b.sql', '002_c.sql'])).toThrow(/sql\/002_b\.sql and sql\/002_c\.sql share the number 2/);
    expect(() => checkSequence(['001_a.sql', '002_b.sql', '003_late.sql', '004_d.sql'])).toThrow(
      /sql\/003_late\.sql takes the number 3, which is left out on purpose/,
    );
    expect(() => checkSequence(['001_a.sql', '003_c.sql'], new Set())).toThrow(MigrationError);
  });
});

describe('migration checksums (migrate on a directory of its own)', () => {
  let db: Database;
  let dir: string;
  beforeAll(async () => {
    db = await openTestDatabase({ empty: true });
    dir = await mkdtemp(join(tmpdir(), 'migrate-'));
  });
  afterAll(async () => {
    await db?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const url = () => pathToFileURL(`${dir}/`);
  const rows = () => db.sql<{ version: string; checksum: string | null }[]>`SELECT version, checksum FROM schema_migrations ORDER BY version`;

  it('records, fills in, and refuses an edited or missing file without applying anything', async () => {
    const a = 'CREATE TABLE mig_a (id int);\n';
    const b = 'CREATE TABLE mig_b (id int);\n';
    await writeFile(join(dir, '001_a.sql'), a);
    await writeFile(join(dir, '002_b.sql'), b);
    expect(await migrate(db.sql, url())).toEqual(['001_a.sql', '002_b.sql']);
    expect(await rows()).toEqual([
      { version: '001_a.sql', checksum: sha256(a) },
      { version: '002_b.sql', checksum: sha256(b) },
    ]);

    // A row recorded before the checksum existed gets the file's on the next run.
    await db.sql`UPDATE schema_migrations SET checksum = NULL WHERE version = '001_a.sql'`;
    expect(await migrate(db.sql, url())).toEqual([]);
    expect((await rows())[0]).toEqual({ version: '001_a.sql', checksum: sha256(a) });

    // An edit after applying, even a comment, is refused, naming the file and both checksums; the new 004 is not applied.
    const edited = `-- a comment added later\n${b}`;
    await writeFile(join(dir, '002_b.sql'), edited);
    await writeFile(join(dir, '004_d.sql'), 'CREATE TABLE mig_d (id int);\n');
    const error = await migrate(db.sql, url()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationError);
    const message = (error as Error).message;
    expect(message).toContain('sql/002_b.sql was edited after it was applied');
    expect(message).toContain(`applied with sha256 ${sha256(b)}`);
    expect(message).toContain(`the file now has sha256 ${sha256(edited)}`);
    expect(message).toContain('new migration');
    expect((await rows()).map((r) => r.version)).toEqual(['001_a.sql', '002_b.sql']);
    expect(await db.sql`SELECT to_regclass('mig_d') AS t`).toEqual([{ t: null }]);

    // Restored as applied, it runs on; then code that lacks a recorded file (older code, or a file removed) is refused.
    await writeFile(join(dir, '002_b.sql'), b);
    expect(await migrate(db.sql, url())).toEqual(['004_d.sql']);
    await unlink(join(dir, '004_d.sql'));
    await expect(migrate(db.sql, url())).rejects.toThrow(/sql\/004_d\.sql is recorded as applied to this database, but there is no such file/);
  });
});

describe('019_long_names.sql on a database that ran the migrations before it', () => {
  let db: Database;
  let dir: string;
  beforeAll(async () => {
    db = await openTestDatabase({ empty: true });
    db.deadline.ms = 0; // as at start-up, where migrations run without the statement deadline
    dir = await mkdtemp(join(tmpdir(), 'migrate-019-'));
  });
  afterAll(async () => {
    await db?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('widens deptName and nickName to 100 characters, keeping the rows and the sibling-name key', async () => {
    const sqlDir = new URL('../sql/', import.meta.url);
    const files = checkSequence(await readdir(sqlDir));
    const at = files.indexOf('019_long_names.sql');
    expect(at).toBeGreaterThan(0);
    for (const file of files.slice(0, at)) await copyFile(new URL(file, sqlDir), join(dir, file));
    await migrate(db.sql, pathToFileURL(`${dir}/`));
    await bootstrap(db.sql, 'migrate-pw-1');
    const lengths = () => db.sql<{ name: string; max: number }[]>`
      SELECT table_name || '.' || column_name AS name, character_maximum_length AS max FROM information_schema.columns
      WHERE table_schema = current_schema() AND (table_name, column_name) IN (('sys_dept', 'dept_name'), ('sys_user', 'nick_name'))
      ORDER BY 1`;
    expect(await lengths()).toEqual([
      { name: 'sys_dept.dept_name', max: 30 },
      { name: 'sys_user.nick_name', max: 30 },
    ]);
    const before = await db.sql`SELECT dept_id, dept_name FROM sys_dept ORDER BY dept_id`;

    await copyFile(new URL('019_long_names.sql', sqlDir), join(dir, '019_long_names.sql'));
    expect(await migrate(db.sql, pathToFileURL(`${dir}/`))).toEqual(['019_long_names.sql']);
    expect(await lengths()).toEqual([
      { name: 'sys_dept.dept_name', max: 100 },
      { name: 'sys_user.nick_name', max: 100 },
    ]);
    expect(await db.sql`SELECT dept_id, dept_name FROM sys_dept ORDER BY dept_id`).toEqual(before);
    const long = 'n'.repeat(100);
    await db.sql`INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name) VALUES ('000000', 0, '0', ${long})`;
    await expect(db.sql`INSERT INTO sys_dept (tenant_id, parent_id, ancestors, dept_name) VALUES ('000000', 0, '0', ${long})`).rejects.toThrow(
      /sys_dept_sibling_name_key/,
    );
    await db.sql`UPDATE sys_user SET nick_name = ${long} WHERE tenant_id = '000000' AND user_name = 'admin'`;
    await expect(db.sql`UPDATE sys_user SET nick_name = ${`${long}x`} WHERE tenant_id = '000000' AND user_name = 'admin'`).rejects.toThrow(
      /too long/,
    );
  });
});

describe('migration checksums through the real start', () => {
  let target: ServiceDatabase;
  beforeAll(async () => {
    target = await serviceDatabase();
  });
  afterAll(async () => {
    await target?.dispose();
  });

  /** The service's database, opened directly while the service is stopped. */
  async function withDatabase<T>(use: (db: Database) => Promise<T>): Promise<T> {
    const db = target.directUrl ? openPostgres(target.directUrl, { max: 1 }) : await openEmbedded(target.env.DATA_DIR);
    db.deadline.ms = 0; // as at start-up, where migrations run without the statement deadline
    try {
      return await use(db);
    } finally {
      await db.close();
    }
  }

  it('fills in the checksums of a database migrated before them, and refuses an edited or missing file', async () => {
    const sqlDir = new URL('../sql/', import.meta.url);
    const files = checkSequence(await readdir(sqlDir));
    const expected = await Promise.all(files.map(async (f) => ({ version: f, checksum: sha256(await readFile(new URL(f, sqlDir))) })));

    // A database migrated before this change: no checksum column at all. It starts, and gets the column and the checksums.
    await withDatabase(async (db) => {
      await migrate(db.sql);
      await db.sql`ALTER TABLE schema_migrations DROP COLUMN checksum`;
    });
    const service = await startService({ ...target.env, ADMIN_PASSWORD: 'migrate-pw-1' });
    expect((await service.stop()).code, service.output()).toBe(0);

    // The database ran a 002 with other bytes than the file has now (the file was edited after it ran),
    // and a migration this code does not have. The start is refused, naming both, before listening.
    const ranWith = sha256('-- 002 as it was when this database ran it\n');
    await withDatabase(async (db) => {
      expect(await db.sql`SELECT version, checksum FROM schema_migrations ORDER BY version`).toEqual(expected);
      await db.sql`UPDATE schema_migrations SET checksum = ${ranWith} WHERE version = '002_security.sql'`;
      await db.sql`INSERT INTO schema_migrations (version, checksum) VALUES ('999_from_newer_code.sql', ${sha256('x')})`;
    });
    const refused = run('main', { ...target.env, PORT: '0', HOST: '127.0.0.1', ADMIN_PASSWORD: 'migrate-pw-1' });
    const exit = await refused.exited;
    const output = refused.output();
    expect(exit.code, output).toBe(65);
    expect(output).not.toContain('Server listening');
    expect(output).toContain('Refusing to start: sql/002_security.sql was edited after it was applied to this database');
    expect(output).toContain(
      `applied with sha256 ${ranWith}, the file now has sha256 ${expected.find((e) => e.version === '002_security.sql')!.checksum}`,
    );
    expect(output).toContain('put the change in a new migration');
    expect(output).toContain('sql/999_from_newer_code.sql is recorded as applied to this database, but there is no such file');
  });
});
