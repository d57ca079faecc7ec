import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { AddressBlocks } from '../src/outbound/outbound.address.js';
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
      managementPort: 0,
      managementHost: '0.0.0.0',
      outbound: { allowed: undefined },
      webhooks: { timeoutMs: 10_000, retrySchedule: [5, 300, 1800, 7200, 18_000, 36_000, 36_000] },
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
      MANAGEMENT_PORT: '',
      MANAGEMENT_HOST: '',
      WEBHOOK_TIMEOUT: '',
      WEBHOOK_RETRY_SCHEDULE: '',
      WEBHOOK_ALLOWED_CIDRS: '',
      PUBLIC_URL: '',
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
      MANAGEMENT_PORT: '9464',
      MANAGEMENT_HOST: '10.0.0.5',
      WEBHOOK_TIMEOUT: '2.5',
      WEBHOOK_RETRY_SCHEDULE: '1,2.5,60',
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8, ::1, 10.1.2.0/24',
      PUBLIC_URL: 'https://api.example.com/',
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
      managementPort: 9464,
      managementHost: '10.0.0.5',
      publicUrl: 'https://api.example.com',
      outbound: { allowed: expect.any(AddressBlocks) },
      webhooks: { timeoutMs: 2500, retrySchedule: [1, 2.5, 60] },
    });
    const allowed = loadConfig(env).outbound.allowed!;
    expect(['127.9.9.9', '10.1.2.200'].map((a) => allowed.check(a))).toEqual([true, true]);
    expect(allowed.check('::1')).toBe(true);
    expect(allowed.check('10.1.3.1')).toBe(false);
    expect(loadConfig({ DATABASE_URL: 'postgres://localhost/x' }).databaseUrl).toBe('postgres://localhost/x');
    expect(loadConfig({ PORT: '0' }).port).toBe(0);
    expect(loadConfig({ PORT: '65535' }).port).toBe(65535);
    expect(loadConfig({ TOKEN_TTL: '1' }).tokenTtl).toBe(1);
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '1' }).auditRetentionDays).toBe(1);
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '36500' }).auditRetentionDays).toBe(36_500);
  });

  it('refuses a malformed WEBHOOK_TIMEOUT, WEBHOOK_RETRY_SCHEDULE or WEBHOOK_ALLOWED_CIDRS, naming it', () => {
    for (const [name, value] of [
      ['WEBHOOK_TIMEOUT', '0'],
      ['WEBHOOK_TIMEOUT', 'ten'],
      ['WEBHOOK_TIMEOUT', '301'],
      ['WEBHOOK_RETRY_SCHEDULE', '5,,10'],
      ['WEBHOOK_RETRY_SCHEDULE', '5,-1'],
      ['WEBHOOK_ALLOWED_CIDRS', '127.0.0.0/33'],
      ['WEBHOOK_ALLOWED_CIDRS', 'localhost'],
      ['WEBHOOK_ALLOWED_CIDRS', '10.0.0.0/8x'],
      ['WEBHOOK_ALLOWED_CIDRS', '127.1'],
      ['WEBHOOK_ALLOWED_CIDRS', '::1/129'],
    ]) {
      expect(() => loadConfig({ [name!]: value }), `${name}=${value}`).toThrow(new RegExp(name!));
    }
  });

  it('reads the outbound allow-list from OUTBOUND_ALLOWED_CIDRS or its former name WEBHOOK_ALLOWED_CIDRS, and refuses both set to different lists', () => {
    const allows = (env: Record<string, string>, address: string) => loadConfig(env).outbound.allowed?.check(address) ?? false;
    expect(allows({ OUTBOUND_ALLOWED_CIDRS: '10.1.0.0/16' }, '10.1.2.3')).toBe(true);
    expect(allows({ WEBHOOK_ALLOWED_CIDRS: '10.1.0.0/16' }, '10.1.2.3')).toBe(true);
    expect(allows({ OUTBOUND_ALLOWED_CIDRS: '10.1.0.0/16', WEBHOOK_ALLOWED_CIDRS: '10.1.0.0/16' }, '10.1.2.3')).toBe(true);
    expect(allows({ OUTBOUND_ALLOWED_CIDRS: '10.1.0.0/16', WEBHOOK_ALLOWED_CIDRS: '' }, '10.1.2.3')).toBe(true);
    expect(allows({ OUTBOUND_ALLOWED_CIDRS: '', WEBHOOK_ALLOWED_CIDRS: '10.1.0.0/16' }, '10.1.2.3')).toBe(true);
    expect(loadConfig({ OUTBOUND_ALLOWED_CIDRS: '' }).outbound.allowed).toBeUndefined();

    const both = () => loadConfig({ OUTBOUND_ALLOWED_CIDRS: '10.1.0.0/16', WEBHOOK_ALLOWED_CIDRS: '10.2.0.0/16' });
    expect(both).toThrow(ConfigError);
    expect(both).toThrow(/OUTBOUND_ALLOWED_CIDRS.*WEBHOOK_ALLOWED_CIDRS/);
    // A malformed list names the variable it was read from.
    expect(() => loadConfig({ OUTBOUND_ALLOWED_CIDRS: '10.0.0.0/33' })).toThrow(/^OUTBOUND_ALLOWED_CIDRS: /);
    expect(() => loadConfig({ WEBHOOK_ALLOWED_CIDRS: '10.0.0.0/33' })).toThrow(/^WEBHOOK_ALLOWED_CIDRS: /);
  });

  it('has no management listener unless MANAGEMENT_PORT is set; MANAGEMENT_HOST defaults to HOST', () => {
    expect(loadConfig({})).toMatchObject({ managementPort: 0, managementHost: '0.0.0.0' });
    expect(loadConfig({ MANAGEMENT_PORT: '0' }).managementPort).toBe(0);
    expect(loadConfig({ HOST: '127.0.0.1', MANAGEMENT_PORT: '9464' })).toMatchObject({ managementPort: 9464, managementHost: '127.0.0.1' });
    expect(loadConfig({ PORT: '0', MANAGEMENT_PORT: '9464' }).managementPort).toBe(9464);
  });

  it('reads PUBLIC_URL as an absolute http(s) URL, a path allowed, without its trailing slash; unset means the request decides', () => {
    expect(loadConfig({}).publicUrl).toBeUndefined();
    for (const [raw, read] of [
      ['https://api.example.com', 'https://api.example.com'],
      ['https://api.example.com/', 'https://api.example.com'],
      ['HTTPS://API.Example.com:443/', 'https://api.example.com'],
      ['http://10.0.0.5:8080/', 'http://10.0.0.5:8080'],
      ['https://example.com/dept-service//', 'https://example.com/dept-service'],
      ['https://[::1]:8443/a/b', 'https://[::1]:8443/a/b'],
    ]) {
      expect(loadConfig({ PUBLIC_URL: raw }).publicUrl, raw).toBe(read);
    }
  });

  it('refuses a PUBLIC_URL that is relative, not http(s), has a query, a fragment or credentials, naming the variable but not the value', () => {
    for (const raw of [
      'api.example.com',
      '/scim',
      'ftp://api.example.com',
      'https://api.example.com/?tenant=1',
      'https://api.example.com/?',
      'https://api.example.com/#top',
      'https://user:secret-pw@api.example.com',
    ]) {
      let thrown: unknown;
      try {
        loadConfig({ PUBLIC_URL: raw });
      } catch (err) {
        thrown = err;
      }
      expect(thrown, raw).toBeInstanceOf(ConfigError);
      expect((thrown as Error).message, raw).toContain('PUBLIC_URL');
      expect((thrown as Error).message, raw).not.toContain('secret-pw');
    }
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
    ['DATABASE_URL', 'postgres://u@h1:5432,h2:5432/db?target_session_attrs=prefer-standby'],
    ['DATABASE_URL', 'postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-only'],
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
    ['MANAGEMENT_PORT', '65536'],
    ['MANAGEMENT_PORT', '-1'],
    ['MANAGEMENT_PORT', 'metrics'],
    ['MANAGEMENT_PORT', '8080'],
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

describe('tracing (docs/operations.md#traces)', () => {
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' };

  it('is off unless an OTLP endpoint is named or OTEL_TRACES_EXPORTER=otlp; none and OTEL_SDK_DISABLED=true turn it off', () => {
    expect(loadConfig({}).traces).toBeUndefined();
    expect(loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }).traces).toBeUndefined();
    expect(loadConfig(endpoint).traces).toBeDefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c.example.com/v1/traces' }).traces).toBeDefined();
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).traces?.url).toBe('http://localhost:4318/v1/traces');
    expect(loadConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).traces).toBeUndefined();
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).traces).toBeUndefined();
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'false' }).traces).toBeDefined();
  });

  it('reads the standard variables, with their defaults', () => {
    expect(loadConfig(endpoint).traces).toEqual({
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      serviceName: 'dept-tenant-service',
      resourceAttributes: {},
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
    });
    expect(
      loadConfig({
        ...endpoint,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_HEADERS: 'api-key=a%20b,x-a=1',
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-a=2',
        OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs,deployment.environment.name=prod',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      }).traces,
    ).toEqual({
      url: 'https://traces.example.com/otlp',
      protocol: 'http/json',
      headers: { 'api-key': 'a b', 'x-a': '2' },
      serviceName: 'from-attrs',
      resourceAttributes: { 'service.name': 'from-attrs', 'deployment.environment.name': 'prod' },
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
    });
    expect(loadConfig({ ...endpoint, OTEL_SERVICE_NAME: 'svc', OTEL_RESOURCE_ATTRIBUTES: 'service.name=other' }).traces?.serviceName).toBe('svc');
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'grpc://collector:4317'],
    ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'not a url'],
    ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'ftp://user:secret-token@collector'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'http'],
    ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'grpc'],
    ['OTEL_EXPORTER_OTLP_HEADERS', 'novalue'],
    ['OTEL_EXPORTER_OTLP_HEADERS', 'k=%zz'],
    ['OTEL_RESOURCE_ATTRIBUTES', '=x'],
    ['OTEL_TRACES_SAMPLER', 'jaeger_remote'],
    ['OTEL_TRACES_SAMPLER_ARG', '1.5'],
    ['OTEL_TRACES_SAMPLER_ARG', 'half'],
    ['OTEL_TRACES_EXPORTER', 'zipkin'],
    ['OTEL_SDK_DISABLED', 'yes'],
  ])('%s=%s with tracing on throws a ConfigError naming the variable', (name, value) => {
    const env: Record<string, string> = { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', [name]: value };
    let thrown: unknown;
    try {
      loadConfig(env);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toContain(name);
    if (value === 'grpc') expect((thrown as Error).message).toContain('http/protobuf');
    if (name.endsWith('_ENDPOINT')) expect((thrown as Error).message).not.toContain(value);
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
