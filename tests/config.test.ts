import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

// DECISIONS §9: configuration comes only from the environment, is checked
// once at start-up, and a bad value stops the process naming the variable.

describe('loadConfig', () => {
  it('has the documented defaults for an empty environment', () => {
    expect(loadConfig({})).toEqual({
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: undefined,
      dataDir: './data',
      adminPassword: undefined,
      jwtSecret: undefined,
      tokenTtl: 7200,
      logLevel: 'info',
      chartCacheMb: 64,
    });
  });

  it('treats empty strings as unset', () => {
    const env = { PORT: '', HOST: '', DATABASE_URL: '', DATA_DIR: '', ADMIN_PASSWORD: '', JWT_SECRET: '', TOKEN_TTL: '', LOG_LEVEL: '', TZ: '' };
    expect(loadConfig(env)).toEqual(loadConfig({}));
  });

  it('reads every variable', () => {
    const env = {
      PORT: '3000',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgresql://u:p@db:5432/app',
      DATA_DIR: '/var/lib/app',
      ADMIN_PASSWORD: 'admin-password',
      JWT_SECRET: 's'.repeat(32),
      TOKEN_TTL: '60',
      LOG_LEVEL: 'debug',
      TZ: 'Asia/Shanghai',
      CHART_CACHE_MB: '8',
    };
    expect(loadConfig(env)).toEqual({
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: 'postgresql://u:p@db:5432/app',
      dataDir: '/var/lib/app',
      adminPassword: 'admin-password',
      jwtSecret: 's'.repeat(32),
      tokenTtl: 60,
      logLevel: 'debug',
      chartCacheMb: 8,
    });
    expect(loadConfig({ DATABASE_URL: 'postgres://localhost/x' }).databaseUrl).toBe('postgres://localhost/x');
    expect(loadConfig({ PORT: '0' }).port).toBe(0);
    expect(loadConfig({ PORT: '65535' }).port).toBe(65535);
    expect(loadConfig({ TOKEN_TTL: '1' }).tokenTtl).toBe(1);
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
    ['JWT_SECRET', 'too-short'],
    ['JWT_SECRET', 's'.repeat(31)],
    ['ADMIN_PASSWORD', 'short'],
    ['ADMIN_PASSWORD', '1234567'],
    ['TZ', 'Mars/Base'],
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
      const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
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
