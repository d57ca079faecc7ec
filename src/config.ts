// Configuration comes only from the environment (docs/operations.md#configuration), optionally
// completed by a .env file, and is checked once at start-up, so a typo stops
// the process with the variable's name instead of surfacing later as odd
// behaviour. This file names the variables and what each means; how one kind
// of value is read and refused is src/config.parse.ts.
import { existsSync } from 'node:fs';
import { DEFAULT_TOKEN_TTL } from './core/limits.js';
import { APPLICATION_NAME } from './db/url.js';
import { boolean, ConfigError, integer, postgresUrl, seconds, text } from './config.parse.js';
import { tracesConfig, TracesConfigError, type TracesConfig } from './traces/traces.config.js';
import { AddressRuleError, parseAllowedCidrs, type AddressRule } from './outbound/outbound.address.js';
import { DELIVERY_DEFAULTS, type DeliveryOptions } from './webhooks/webhook.options.js';

export { ConfigError };

export interface Config {
  port: number;
  host: string;
  /** PostgreSQL URL; undefined selects the embedded PGlite in dataDir. */
  databaseUrl: string | undefined;
  /** The server itself or a session pool, for LISTEN and migrations, when DATABASE_URL is a transaction pooler. */
  databaseDirectUrl: string | undefined;
  /** Named prepared statements; false behind a transaction pooler that cannot keep them (PgBouncer before 1.21, or without max_prepared_statements). */
  dbPrepare: boolean;
  dataDir: string;
  adminPassword: string | undefined;
  jwtSecret: string | undefined;
  /** Token lifetime in seconds. */
  tokenTtl: number;
  logLevel: string;
  /** Audit records older than this many days are purged. */
  auditRetentionDays: number;
  /** Budget of the serialised department charts kept per process (dept list/tree), in MiB. */
  chartCacheMb: number;
  /**
   * The service's address as its clients reach it (PUBLIC_URL, no trailing
   * slash), the base of every absolute URL it hands out (SCIM's Location and
   * meta.location); undefined: taken from each request.
   */
  publicUrl: string | undefined;
  /** Origins allowed to call from a browser (CORS); undefined: CORS off, no CORS headers. */
  corsOrigins: string[] | undefined;
  /** Seconds the start-up waits for the database to answer before giving up (docs/operations.md). */
  dbStartTimeout: number;
  /** Seconds SIGTERM/SIGINT lets in-flight requests finish before they are cut off. */
  shutdownTimeout: number;
  /** The management listener's port (/metrics, /healthz, /readyz); 0: none (docs/operations.md#metrics). */
  managementPort: number;
  managementHost: string;
  /** OpenTelemetry traces (the standard OTEL_* variables); undefined: off, the SDK is never loaded. */
  traces: TracesConfig | undefined;
  /** Every outbound call, webhook deliveries included (docs/webhooks.md#addresses): the addresses allowed besides public ones. */
  outbound: AddressRule;
  /** Webhook delivery (docs/webhooks.md): one attempt's limit, the retry steps. */
  webhooks: Pick<DeliveryOptions, 'timeoutMs' | 'retrySchedule'>;
}

export const DEFAULT_CHART_CACHE_MB = 64;
/**
 * Reads `.env` from the working directory when there is one. A variable
 * already in the environment wins over the file, even when set to "", so a
 * deployment's real settings can never be replaced by a stray file.
 */
export function loadEnvFile(path = '.env'): boolean {
  if (!existsSync(path)) return false;
  process.loadEnvFile(path);
  return true;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** CORS_ORIGINS: comma-separated origins such as https://admin.example.com, or `*` for any. */
function origins(env: NodeJS.ProcessEnv): string[] | undefined {
  const raw = text(env, 'CORS_ORIGINS');
  if (raw === undefined) return undefined;
  const list = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of list) {
    let origin: string | undefined;
    try {
      origin = new URL(entry).origin;
    } catch {
      origin = undefined;
    }
    if (entry !== '*' && origin !== entry) {
      throw new ConfigError(`CORS_ORIGINS must list origins like https://admin.example.com (scheme, host, optional port; no path), got "${entry}"`);
    }
  }
  return list.length > 0 ? list : undefined;
}

/**
 * PUBLIC_URL: an absolute http:// or https:// URL, a path allowed (a proxy may
 * serve the service under one), without query, fragment or credentials;
 * returned normalised, without its trailing slash. The error never repeats
 * the value, which may carry a password.
 */
function publicUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = text(env, 'PUBLIC_URL');
  if (raw === undefined) return undefined;
  const refuse = (why: string): never => {
    throw new ConfigError(`PUBLIC_URL must be the service's address as its clients reach it, such as https://api.example.com: ${why}`);
  };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('it is not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') refuse(`its scheme is ${url.protocol.slice(0, -1)}, not http or https`);
  if (raw.includes('?') || raw.includes('#')) refuse('it has a query or a fragment');
  if (url.username !== '' || url.password !== '') refuse('it carries a user name or password');
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

function traces(env: NodeJS.ProcessEnv): TracesConfig | undefined {
  try {
    return tracesConfig(env, APPLICATION_NAME);
  } catch (err) {
    if (err instanceof TracesConfigError) throw new ConfigError(err.message);
    throw err;
  }
}

/**
 * OUTBOUND_ALLOWED_CIDRS, or WEBHOOK_ALLOWED_CIDRS, its name from when webhooks
 * were the only outbound calls: still read, so a deployment that set it keeps
 * its list. Both set to different lists is refused rather than one silently
 * winning: which one the operator meant is not ours to guess.
 */
function outbound(env: NodeJS.ProcessEnv): Config['outbound'] {
  const current = text(env, 'OUTBOUND_ALLOWED_CIDRS');
  const former = text(env, 'WEBHOOK_ALLOWED_CIDRS');
  if (current !== undefined && former !== undefined && current !== former) {
    throw new ConfigError(
      'OUTBOUND_ALLOWED_CIDRS and WEBHOOK_ALLOWED_CIDRS (its former name) are both set, to different lists: set only OUTBOUND_ALLOWED_CIDRS',
    );
  }
  const name = current !== undefined ? 'OUTBOUND_ALLOWED_CIDRS' : 'WEBHOOK_ALLOWED_CIDRS';
  try {
    return { allowed: parseAllowedCidrs(current ?? former) };
  } catch (err) {
    if (err instanceof AddressRuleError) throw new ConfigError(`${name}: ${err.message}`);
    throw err;
  }
}

function webhooks(env: NodeJS.ProcessEnv): Config['webhooks'] {
  const timeout = text(env, 'WEBHOOK_TIMEOUT');
  const schedule = text(env, 'WEBHOOK_RETRY_SCHEDULE');
  return {
    timeoutMs: timeout === undefined ? DELIVERY_DEFAULTS.timeoutMs : seconds('WEBHOOK_TIMEOUT', timeout, 300) * 1000,
    retrySchedule:
      schedule === undefined
        ? DELIVERY_DEFAULTS.retrySchedule
        : schedule.split(',').map((step) => seconds('WEBHOOK_RETRY_SCHEDULE (comma-separated seconds)', step, 7 * 86_400)),
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const databaseUrl = postgresUrl(env, 'DATABASE_URL');
  const databaseDirectUrl = postgresUrl(env, 'DATABASE_DIRECT_URL');
  if (databaseDirectUrl !== undefined && databaseUrl === undefined) {
    throw new ConfigError('DATABASE_DIRECT_URL is only used with DATABASE_URL; set both, or neither for the embedded database');
  }
  const logLevel = text(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const adminPassword = text(env, 'ADMIN_PASSWORD');
  if (adminPassword !== undefined && adminPassword.length < 8) {
    throw new ConfigError('ADMIN_PASSWORD must be at least 8 characters');
  }
  const jwtSecret = text(env, 'JWT_SECRET');
  if (jwtSecret !== undefined && jwtSecret.length < 32) {
    throw new ConfigError('JWT_SECRET must be at least 32 characters');
  }
  const tz = text(env, 'TZ');
  if (tz !== undefined) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: tz });
    } catch {
      throw new ConfigError(`TZ must be an IANA time zone such as Asia/Shanghai, got "${tz}"`);
    }
  }
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = text(env, 'HOST') ?? '0.0.0.0';
  const managementPort = integer(env, 'MANAGEMENT_PORT', 0, 0, 65535);
  if (managementPort !== 0 && managementPort === port) {
    throw new ConfigError(`MANAGEMENT_PORT must differ from PORT (both ${port}): /metrics is never served on the API's port`);
  }
  return {
    port,
    host,
    databaseUrl,
    databaseDirectUrl,
    dbPrepare: boolean(env, 'DB_PREPARE', true),
    dataDir: text(env, 'DATA_DIR') ?? './data',
    adminPassword,
    jwtSecret,
    tokenTtl: integer(env, 'TOKEN_TTL', DEFAULT_TOKEN_TTL, 1, 31_536_000),
    logLevel,
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 365, 1, 36_500),
    chartCacheMb: integer(env, 'CHART_CACHE_MB', DEFAULT_CHART_CACHE_MB, 0, 65_536),
    publicUrl: publicUrl(env),
    corsOrigins: origins(env),
    dbStartTimeout: integer(env, 'DB_START_TIMEOUT', 30, 1, 3600),
    shutdownTimeout: integer(env, 'SHUTDOWN_TIMEOUT', 10, 0, 3600),
    managementPort,
    managementHost: text(env, 'MANAGEMENT_HOST') ?? host,
    traces: traces(env),
    outbound: outbound(env),
    webhooks: webhooks(env),
  };
}
