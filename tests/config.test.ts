import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { DIST } from './support/build.js';

// docs/operations.md#configuration: configuration comes only from the environment, is checked
// once at start-up, and a bad value stops the process naming the variable.

describe('loadConfig', () => {
  it('has the documented defaults for an empty environment', () => {
    expect(loadConfig({})).toEqual({
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: undefined,
      databaseDirectUrl: undefined,
      dbPrepare: true,
      dataDir: './data',
      adminPassword: undefined,
      jwtSecret: undefined,
      tokenTtl: 7200,
      logLevel: 'info',
      auditRetentionDays: 365,
      dbStartTimeout: 30,
      shutdownTimeout: 10,
      chartCacheMb: 64,
    });
  });

  it('treats empty strings as unset', () => {
    const env = {
      PORT: '',
      HOST: '',
      DATABASE_URL: '',
      DATABASE_DIRECT_URL: '',
      DB_PREPARE: '',
      DATA_DIR: '',
      ADMIN_PASSWORD: '',
      JWT_SECRET: '',
      TOKEN_TTL: '',
      LOG_LEVEL: '',
      TZ: '',
      DB_START_TIMEOUT: '',
      SHUTDOWN_TIMEOUT: '',
      AUDIT_RETENTION_DAYS: '',
    };
    expect(loadConfig(env)).toEqual(loadConfig({}));
  });

  it('reads every variable', () => {
    const env = {
      PORT: '3000',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgresql://u:p@db1:5432,db2:5433/app?target_session_attrs=read-write',
      DATABASE_DIRECT_URL: 'postgresql://u:p@db1:5432/app',
      DB_PREPARE: 'false',
      DATA_DIR: '/var/lib/app',
      ADMIN_PASSWORD: 'admin-password',
      JWT_SECRET: 's'.repeat(32),
      TOKEN_TTL: '60',
      LOG_LEVEL: 'debug',
      TZ: 'Asia/Shanghai',
      AUDIT_RETENTION_DAYS: '30',
      DB_START_TIMEOUT: '5',
      SHUTDOWN_TIMEOUT: '0',
      CHART_CACHE_MB: '8',
    };
    expect(loadConfig(env)).toEqual({
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: 'postgresql://u:p@db1:5432,db2:5433/app?target_session_attrs=read-write',
      databaseDirectUrl: 'postgresql://u:p@db1:5432/app',
      dbPrepare: false,
      dataDir: '/var/lib/app',
      adminPassword: 'admin-password',
      jwtSecret: 's'.repeat(32),
      tokenTtl: 60,
      logLevel: 'debug',
      auditRetentionDays: 30,
      dbStartTimeout: 5,
      shutdownTimeout: 0,
      chartCacheMb: 8,
    });
    expect(loadConfig({ DATABASE_URL: 'postgres://localhost/x' }).databaseUrl).toBe('postgres://localhost/x');
    expect(loadConfig({ PORT: '0' }).port).toBe(0);
    expect(loadConfig({ PORT: '65535' }).port).toBe(65535);
    expect(loadConfig({ TOKEN_TTL: '1' }).tokenTtl).toBe(1);
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '1' }).auditRetentionDays).toBe(1);
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '36500' }).auditRetentionDays).toBe(36_500);
  });

  it('reads CORS_ORIGINS as a comma-separated list of origins; unset or empty means CORS off', () => {
    expect(loadConfig({}).corsOrigins).toBeUndefined();
    expect(loadConfig({ CORS_ORIGINS: '' }).corsOrigins).toBeUndefined();
    expect(loadConfig({ CORS_ORIGINS: ' , ' }).corsOrigins).toBeUndefined();
    expect(loadConfig({ CORS_ORIGINS: 'https://admin.example.com' }).corsOrigins).toEqual(['https://admin.example.com']);
    expect(loadConfig({ CORS_ORIGINS: 'https://admin.example.com, http://localhost:5173' }).corsOrigins).toEqual([
      'https://admin.example.com',
      'http://localhost:5173',
    ]);
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['TOKEN_TTL', '0'],
    ['TOKEN_TTL', 'ten'],
    ['LOG_LEVEL', 'loud'],
    ['CHART_CACHE_MB', '-1'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'postgres://u@h1:5432,,h2/db'],
    ['DATABASE_URL', 'postgres://u@h1:5432/db?target_session_attrs=master'],
    ['DB_PREPARE', 'no'],
    ['JWT_SECRET', 'too-short'],
    ['JWT_SECRET', 's'.repeat(31)],
    ['ADMIN_PASSWORD', 'short'],
    ['ADMIN_PASSWORD', '1234567'],
    ['TZ', 'Mars/Base'],
    ['AUDIT_RETENTION_DAYS', '0'],
    ['AUDIT_RETENTION_DAYS', '36501'],
    ['AUDIT_RETENTION_DAYS', 'forever'],
    ['CORS_ORIGINS', 'admin.example.com'],
    ['CORS_ORIGINS', 'https://admin.example.com/'],
    ['CORS_ORIGINS', 'https://admin.example.com/path'],
    ['CORS_ORIGINS', 'https://a.example.com,ftp//b'],
    ['DB_START_TIMEOUT', '0'],
    ['DB_START_TIMEOUT', '1.5'],
    ['DB_START_TIMEOUT', '3601'],
    ['SHUTDOWN_TIMEOUT', '-1'],
    ['SHUTDOWN_TIMEOUT', 'soon'],
  ])('%s=%s throws a ConfigError naming the variable', (name, value) => {
    let thrown: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toContain(name);
  });
});

describe('the process', () => {
  it('exits non-zero with PORT=abc, naming PORT on stderr, before touching any database', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'config-test-'));
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, PORT: 'abc', DATA_DIR: join(dataDir, 'data') };
      for (const name of ['DATABASE_URL', 'ADMIN_PASSWORD', 'JWT_SECRET', 'TOKEN_TTL', 'LOG_LEVEL', 'TZ', 'HOST']) delete env[name];
      // The built service (tests/support/build.ts), as in production.
      const result = spawnSync(process.execPath, [join(DIST, 'main.js')], {
        cwd: join(import.meta.dirname, '..'),
        env,
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(result.error).toBeUndefined();
      // null would mean it was still running when the timeout killed it.
      expect(result.status).not.toBeNull();
      expect(result.status).not.toBe(0);
      expect(result.stderr).toContain('PORT');
      // It stopped at the configuration: no embedded database was created.
      expect(readdirSync(dataDir)).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

const CONFIG_VARIABLES = ['DATABASE_URL', 'DATA_DIR', 'ADMIN_PASSWORD', 'JWT_SECRET', 'TOKEN_TTL', 'LOG_LEVEL', 'TZ', 'HOST', 'PORT', 'CORS_ORIGINS'];

describe('the process with a .env file', () => {
  it('reads .env from its working directory, lets the real environment win, and prints a generated password on a line of its own', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'env-test-'));
    try {
      // The file sets DATA_DIR (used) and an invalid PORT, which the real environment overrides.
      writeFileSync(join(dir, '.env'), '# local settings\nDATA_DIR=./data-from-env\nPORT=not-a-port\nHOST=127.0.0.1\nLOG_LEVEL=info\n');
      const env: NodeJS.ProcessEnv = { ...process.env };
      for (const name of CONFIG_VARIABLES) delete env[name];
      env.PORT = '0';
      const child = spawn(process.execPath, [join(DIST, 'main.js')], { cwd: dir, env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const deadline = Date.now() + 60_000;
      while (!stdout.includes('Server listening') && child.exitCode === null && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      child.kill('SIGTERM');
      await exited;

      expect(stdout, stderr).toContain('Server listening at http://127.0.0.1:');
      expect(existsSync(join(dir, 'data-from-env'))).toBe(true);
      const lines = stdout.split('\n').filter((line) => line.trim() !== '');
      const passwordLines = lines.filter((line) => !line.startsWith('{'));
      expect(passwordLines).toHaveLength(1);
      const password = /^Generated password of user "admin" in tenant 000000 \(shown once\): (\S{8,})$/.exec(passwordLines[0]!)?.[1];
      expect(password).toBeTruthy();
      for (const line of lines.filter((l) => l.startsWith('{'))) {
        expect(() => JSON.parse(line)).not.toThrow();
        expect(line).not.toContain(password);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
