import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DEFAULT_CHART_CACHE_MB, type Config } from './config.js';
import type { Sql } from './db/database.js';
import { envelopePlugin } from './http/envelope.plugin.js';
import { installErrorHandler } from './http/error.handler.js';
import { buildValidator } from './http/validation.js';
import { installJsonParser } from './http/json.parser.js';
import { clientErrorHandler, frameworkErrors } from './http/framework.errors.js';
import { dropEmptyQueryValues, requestId } from './http/request.hooks.js';
import { successEnvelope } from './http/envelope.schema.js';
import { authPlugin } from './auth/auth.plugin.js';
import { sharedJwtSecret } from './auth/auth.sql.js';
import { authRoutes } from './auth/auth.routes.js';
import { deptRoutes } from './depts/dept.routes.js';
import { userRoutes } from './users/user.routes.js';
import { tenantRoutes } from './tenants/tenant.routes.js';
import { healthRoutes } from './health.routes.js';

export interface AppOptions {
  sql: Sql;
  config: Pick<Config, 'jwtSecret' | 'tokenTtl' | 'logLevel'> & Partial<Pick<Config, 'chartCacheMb'>>;
  /** false: no logging (tests). Otherwise pino at config.logLevel, to stdout or to logStream. */
  logger?: false;
  logStream?: NodeJS.WritableStream;
}

/**
 * The whole HTTP application on a given database, without listening: main.ts
 * listens, the tests inject. Registration order: external plugins, then our
 * cross-cutting plugins, then one route plugin per resource.
 */
export async function buildApp({ sql, config, logger, logStream }: AppOptions): Promise<FastifyInstance> {
  const loggerOptions: FastifyServerOptions['logger'] = {
    level: config.logLevel,
    // Tokens travel only in this header; passwords only in bodies, which are never logged.
    redact: ['req.headers.authorization'],
    ...(logStream ? { stream: logStream } : {}),
  };
  const app = Fastify({
    logger: logger ?? loggerOptions,
    bodyLimit: 1024 * 1024,
    // A batch delete path carries up to 1000 ids of up to 19 digits each.
    routerOptions: { maxParamLength: 20_000 },
    requestIdHeader: false,
    genReqId: requestId,
    schemaController: { compilersFactory: { buildValidator } },
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Only JSON bodies are accepted; Fastify's default text/plain parser would let other types through to validation.
  app.removeContentTypeParser('text/plain');
  installJsonParser(app);
  dropEmptyQueryValues(app);

  installErrorHandler(app);
  await app.register(envelopePlugin);

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'Department and tenant service', version: '0.1.0' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
      security: [{ bearer: [] }],
    },
    // Handlers return `data`; the wire carries it inside the envelope, so the document says so.
    transform: ({ schema, url }) => {
      const response = schema?.response as Record<string, unknown> | undefined;
      if (!response?.['200']) return { schema, url };
      return { schema: { ...schema, response: { ...response, 200: successEnvelope(response['200'] as never) } }, url };
    },
  });
  // The docs page and its assets are public and are not JSON: no token, no envelope.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...route.config, public: true, rawResponse: true };
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });
  app.get('/openapi.json', { config: { public: true, rawResponse: true }, schema: { hide: true } }, async () => app.swagger());

  const secret = config.jwtSecret ?? (await sharedJwtSecret(sql, randomBytes(48).toString('base64url')));
  await app.register(authPlugin, { sql, secret, tokenTtl: config.tokenTtl });

  await app.register(healthRoutes, { sql });
  await app.register(authRoutes, { sql, tokenTtl: config.tokenTtl });
  await app.register(deptRoutes, { sql, prefix: '/system/dept-api', chartCacheBytes: (config.chartCacheMb ?? DEFAULT_CHART_CACHE_MB) * 2 ** 20 });
  await app.register(userRoutes, { sql, prefix: '/system/user-api' });
  await app.register(tenantRoutes, { sql, prefix: '/system/tenant-api' });
  return app;
}
