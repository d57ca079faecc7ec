import { randomBytes } from 'node:crypto';
import type { Bindings, ChildLoggerOptions } from 'pino';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DEFAULT_CHART_CACHE_MB, type Config } from './config.js';
import type { Sql } from './db/database.js';
import type { ExchangeObserver } from './db/exchange.observer.js';
import { envelopePlugin } from './http/envelope.plugin.js';
import { lifecyclePlugin, REQUEST_DEADLINE_MS } from './http/lifecycle.js';
import { installErrorHandler } from './http/error.handler.js';
import { retryReads } from './http/read.retry.js';
import { buildSerializer, buildValidator } from './http/validation.js';
import { installJsonParser } from './http/json.parser.js';
import { refuseInvalidQueryText } from './http/unicode.js';
import { clientErrorHandler, frameworkErrors } from './http/framework.errors.js';
import { dropEmptyQueryValues, requestId } from './http/request.hooks.js';
import { OneLinePerRequest } from './http/request.log.js';
import { stdoutDestination } from './http/log.destination.js';
import { registerOpenApi } from './http/openapi.js';
import { headersPlugin } from './http/headers.plugin.js';
import { authPlugin } from './auth/auth.plugin.js';
import { sessionIsLive, sharedJwtSecret } from './auth/auth.sql.js';
import { authRoutes } from './auth/auth.routes.js';
import { deptRoutes } from './depts/dept.routes.js';
import { deptFileRoutes } from './depts/dept.file.routes.js';
import { userRoutes } from './users/user.routes.js';
import { tenantRoutes } from './tenants/tenant.routes.js';
import { healthRoutes } from './health.routes.js';
import { BODY_LIMIT_BYTES, MAX_PATH_PARAM } from './core/limits.js';
import { auditPlugin, type AuditOptions } from './audit/audit.plugin.js';
import { cacheCounts } from './core/cache.counts.js';
import { metricsPlugin } from './metrics/metrics.plugin.js';
import { webhookPlugin, type WebhookOptions } from './webhooks/webhook.plugin.js';
import { apiKeyRoutes } from './apikeys/apikey.routes.js';
import { apiKeyIsLive } from './apikeys/apikey.sql.js';
import { decorateRequestDatabase } from './http/request.database.js';
import { scimPlugin } from './scim/scim.plugin.js';
import { ProviderClients } from './sso/sso.client.js';
import { ssoRoutes } from './sso/sso.routes.js';
import { ssoSignInRoutes } from './sso/sso.signin.routes.js';
import { quotaPlugin } from './quotas/quota.plugin.js';
import { packageRoutes } from './packages/package.routes.js';
import { restorePlugin } from './restore.plugin.js';

export interface AppOptions {
  sql: Sql;
  /** For LISTEN, which a transaction pooler cannot carry (Database.direct); default `sql`. */
  directSql?: Sql;
  /** The Database's exchange counters (Database.exchanges), for the db_* metrics; none without them. */
  exchanges?: ExchangeObserver;
  config: Pick<Config, 'jwtSecret' | 'tokenTtl' | 'logLevel'> &
    Partial<Pick<Config, 'corsOrigins' | 'chartCacheMb' | 'auditRetentionDays' | 'outbound' | 'webhooks' | 'publicUrl'>>;
  /** Audit feed internals (notification mode, stream timings); tests set them. */
  audit?: AuditOptions;
  /** false: no logging (tests). Otherwise pino at config.logLevel, to stdout or to logStream. */
  logger?: false;
  logStream?: NodeJS.WritableStream;
  /** Milliseconds a request may take before it is answered 503 (src/http/lifecycle.ts); tests shorten it. */
  requestDeadlineMs?: number;
  /** Milliseconds a checked token is trusted without reading its session again (src/auth/session.cache.ts); tests shorten it. */
  sessionCacheMs?: number;
  /** Webhook worker internals (poll and maintenance intervals, concurrency); tests shorten them. */
  webhooks?: WebhookOptions;
  /** OpenTelemetry's request spans (src/traces/traces.sdk.ts), registered first, giving a sampled request an `sql` that records its statements; absent with tracing off. */
  tracing?: (app: FastifyInstance) => Promise<void>;
}

/**
 * Each request's child logger. Fastify hands pino an options object on every
 * request, empty unless the route sets a log level or serializers; given one,
 * pino builds the child the long way (new formatters, the options checked),
 * without one the child is the parent plus the request id. Same child either
 * way; any option Fastify passes still reaches pino.
 */
function requestLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  for (const _ in options) return parent.child(bindings, options);
  return parent.child(bindings);
}

/**
 * The whole HTTP application on a given database, without listening: main.ts
 * listens, the tests inject. Registration order: external plugins, then our
 * cross-cutting plugins, then one route plugin per resource.
 */
export async function buildApp({
  sql,
  directSql = sql,
  exchanges,
  config,
  logger,
  logStream,
  audit,
  requestDeadlineMs = REQUEST_DEADLINE_MS,
  sessionCacheMs,
  tracing,
  webhooks,
}: AppOptions): Promise<FastifyInstance> {
  const loggerOptions: FastifyServerOptions['logger'] = {
    level: config.logLevel,
    // No redaction: the request's line carries Fastify's `req` (method, URL, host, client), never its
    // headers, where tokens travel, nor its body, where passwords do (tests/logging.test.ts holds it at
    // trace level). A redact path that can never match would still be walked on every line.
    stream: logStream ?? stdoutDestination(),
  };
  const app = Fastify({
    logger: logger ?? loggerOptions,
    logController: new OneLinePerRequest(),
    bodyLimit: BODY_LIMIT_BYTES,
    // A batch delete path carries up to MAX_BATCH_IDS ids of up to 19 digits each.
    // The document names paths without a trailing slash (POST /system/dept-api); the slash form still routes.
    routerOptions: { maxParamLength: MAX_PATH_PARAM, ignoreTrailingSlash: true },
    requestIdHeader: false,
    genReqId: requestId,
    childLoggerFactory: requestLogger,
    schemaController: { compilersFactory: { buildValidator, buildSerializer } },
    frameworkErrors,
    clientErrorHandler,
    // Requests arriving during shutdown get our 503 envelope from lifecycle.ts instead of Fastify's own body.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>();
  decorateRequestDatabase(app, sql);
  // Before every other hook, so the request's span is open while they run.
  if (tracing) await app.register(tracing);

  // Only JSON bodies are accepted; Fastify's default text/plain parser would let other types through to validation.
  app.removeContentTypeParser('text/plain');
  installJsonParser(app);
  dropEmptyQueryValues(app);
  refuseInvalidQueryText(app);

  installErrorHandler(app);
  retryReads(app);
  await app.register(envelopePlugin);
  await app.register(headersPlugin, { corsOrigins: config.corsOrigins });
  await app.register(lifecyclePlugin, { requestDeadlineMs });

  await registerOpenApi(app);

  // Before the routes, so that its onResponse hook times every one of them (docs/operations.md#metrics).
  const caches = { chartCache: cacheCounts(), sessionCache: cacheCounts() };
  await app.register(metricsPlugin, { exchanges, ...caches });

  const secret = config.jwtSecret ?? (await sharedJwtSecret(sql, randomBytes(48).toString('base64url')));
  await app.register(authPlugin, { secret, tokenTtl: config.tokenTtl, sessionCacheMs, sessionCacheCounts: caches.sessionCache });

  await app.register(restorePlugin, { sql, listenSql: directSql });
  await app.register(healthRoutes);
  await app.register(authRoutes, { tokenTtl: config.tokenTtl });
  await app.register(deptRoutes, {
    prefix: '/system/dept-api',
    chartCacheBytes: (config.chartCacheMb ?? DEFAULT_CHART_CACHE_MB) * 2 ** 20,
    chartCacheCounts: caches.chartCache,
  });
  await app.register(deptFileRoutes, { prefix: '/system/dept-api' });
  await app.register(userRoutes, { prefix: '/system/user-api' });
  await app.register(tenantRoutes, { prefix: '/system/tenant-api' });
  await app.register(apiKeyRoutes, { prefix: '/system/apikey-api' });
  await app.register(packageRoutes, { prefix: '/system/package-api' });
  await app.register(quotaPlugin, { sql });
  await app.register(scimPlugin, { prefix: '/scim/v2', publicUrl: config.publicUrl });
  // Calls to identity providers follow the address rule of every outbound call (config.outbound).
  const outboundRule = { allowed: config.outbound?.allowed };
  await app.register(ssoRoutes, { rule: outboundRule, publicUrl: config.publicUrl, prefix: '/system/sso-api' });
  await app.register(ssoSignInRoutes, {
    clients: new ProviderClients(outboundRule),
    publicUrl: config.publicUrl,
    tokenTtl: config.tokenTtl,
    prefix: '/auth/sso',
  });
  await app.register(auditPlugin, {
    sql,
    listenSql: directSql,
    audit: { retentionDays: config.auditRetentionDays, ...audit },
    sessionIsLive: (viewer) => (viewer.apiKeyId === undefined ? sessionIsLive(sql, viewer) : apiKeyIsLive(sql, viewer.tenantId, viewer.apiKeyId)),
  });
  // Deliveries follow the address rule of every outbound call (config.outbound).
  await app.register(webhookPlugin, { sql, webhooks: { ...config.webhooks, ...config.outbound, ...webhooks } });
  return app;
}
