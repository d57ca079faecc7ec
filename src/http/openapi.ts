import { readFileSync } from 'node:fs';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { IdsParam } from '../core/common.schema.js';
import { LOCATION, SuccessEnvelope } from './envelope.schema.js';
import { BODY_LIMIT_TEXT } from '../core/limits.js';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * The docs page runs Swagger UI from our own origin: its scripts, styles and
 * the document are files of this service, so nothing else is allowed. Its
 * inline SVG icons are data: URLs; Swagger UI sets a few style attributes.
 */
const DOCS_CSP = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'style-src': ["'self'", "'unsafe-inline'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'font-src': ["'self'"],
  'object-src': ["'none'"],
  'base-uri': ["'self'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
};

type Schema = Record<string, unknown>;

/**
 * What each failure status means, for the document: the response's
 * description and an example msg. A status missing here gets no
 * description, and scripts/openapi.ts (run by CI) refuses the document.
 * On the wire every failure is the same ErrorEnvelope.
 */
const FAILURES: Record<number, [description: string, example: string]> = {
  400: ['Invalid input; msg names the field', 'Invalid input: body.deptName must NOT have fewer than 1 characters'],
  401: [
    'Missing, malformed, expired or revoked token; at login, wrong tenant, user or password',
    'Missing Authorization header; send "Bearer <access_token>"',
  ],
  403: ["Authenticated but not allowed: the caller's role or tenant scope", 'Your role "user" lacks the permission system:dept:add'],
  404: ['No such live resource visible to the caller', 'Department 4711 not found'],
  409: ['Conflicts with the current state; msg says with what', 'Department 101 has enabled child department "Sales" (102); disable it first'],
  412: ['If-Match names a version that is no longer current; nothing changed', 'If-Match does not match the current version; read the record again'],
  413: [`Body larger than ${BODY_LIMIT_TEXT}`, `Request body is larger than ${BODY_LIMIT_TEXT}`],
  415: ['Body is not application/json', 'Content-Type must be application/json'],
  422: [
    'The Idempotency-Key was used before with another request body; nothing changed',
    'Idempotency-Key "order-4711" was used with another request body; use a new key for a new operation',
  ],
  429: ['Too many failed logins for this account; retry later', 'Too many failed logins for this account; try again in 10 minute(s)'],
  500: [
    'Unexpected failure; the details are only in the log, under the request id',
    'Internal server error (request id 3f2c8a4e-6b1d-4e0a-9c57-1f0e2d3b4a5c)',
  ],
  503: ['The database is unavailable or the service is shutting down; retry later', 'Database unavailable'],
};

/** The 200 of an operation as the wire carries it: the success envelope around the route's data. */
function successResponse(data: Schema): Schema {
  const { [LOCATION]: location, ...dataSchema } = data;
  const isNull = dataSchema.type === 'null';
  return {
    'x-response-description': isNull ? 'Done; data is null' : 'Success; data holds the result',
    allOf: [{ $ref: 'SuccessEnvelope' }, { type: 'object', required: ['data'], properties: { data: dataSchema } }],
    ...(isNull ? { examples: [{ code: 200, msg: 'success', data: null }] } : {}),
    ...(location ? { headers: { location: { type: 'string', description: location } } } : {}),
  };
}

interface ResponseObject {
  description?: string;
  content?: Record<string, { schema?: { $ref?: string }; example?: unknown }>;
}

/** Every declared failure as the document shows it: the shared envelope with the status's own description and example. */
function describeFailures(document: { paths?: Record<string, Record<string, { responses?: Record<string, ResponseObject> }>> }) {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const media = response.content?.['application/json'];
        if (media?.schema?.$ref !== '#/components/schemas/ErrorEnvelope') continue;
        const [description, msg] = FAILURES[Number(status)] ?? [];
        response.description = description ?? 'Default Response';
        media.example = { code: Number(status), msg: msg ?? 'Request refused', data: null };
      }
    }
  }
  return document;
}

/**
 * The OpenAPI 3.1 document at /openapi.json and Swagger UI at /docs, both
 * built from the routes' own TypeBox schemas. Shared schemas are named by
 * their $id (Dept, Tenant, ErrorEnvelope, ...), so generated clients get
 * those names.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  app.addSchema(SuccessEnvelope);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Department and tenant service',
        version,
        description:
          'Departments (a tree per tenant), users and tenants (a hierarchy of customer organisations). ' +
          'Every response is the envelope {code, msg, data}; on failure the HTTP status equals code and data is null.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [{ url: '/', description: 'This service' }],
      tags: [
        { name: 'auth', description: 'Login, logout, the current user' },
        { name: 'departments', description: "The caller's tenant's department tree" },
        { name: 'users', description: "Accounts of the caller's tenant (tenant admins)" },
        { name: 'tenants', description: "The caller's tenant and the tenants below it" },
        { name: 'audit', description: 'Audit trail, change feed and its live stream (admins)' },
        { name: 'sso', description: "Single sign-on through a tenant's identity provider (OpenID Connect): connections, the SPA's flow" },
        { name: 'health', description: 'Liveness and readiness probes' },
      ],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } },
      security: [{ bearer: [] }],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transformObject: (documentObject) => describeFailures((documentObject as { openapiObject: never }).openapiObject),
    transform: ({ schema, url, route }) => {
      const response = schema?.response as Record<string, Schema> | undefined;
      // A 200 that declares its own content (the audit stream's text/event-stream) is documented as sent;
      // every other 200 travels inside the envelope, also where the route writes the envelope itself (list, tree).
      const ownContent = response?.['200'] !== undefined && 'content' in response['200'];
      const transformed = response?.['200'] && !ownContent ? { ...schema, response: { ...response, 200: successResponse(response['200']) } } : schema;
      // GET /{id} and DELETE /{ids} (or /{packageId} and /{packageIds}) are
      // one path to a client: the document names DELETE's parameter in the
      // singular too, so the templates do not collide. The wire is
      // positional, so the handler's own name does not matter.
      const many = route.method === 'DELETE' ? /\/:(\w*[iI]d)s$/.exec(url) : null;
      if (many) {
        const one = many[1]!;
        const ids = (schema?.params as { properties?: Record<string, unknown> } | undefined)?.properties?.[`${one}s`] ?? IdsParam.properties.ids;
        return {
          schema: { ...transformed, params: { type: 'object', required: [one], properties: { [one]: ids } } },
          url: url.replace(/:\w+$/, `:${one}`),
        };
      }
      return { schema: transformed, url };
    },
  });
  // The docs page and its assets are public and are not JSON: no token, no envelope, their own CSP.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) {
      route.config = {
        ...route.config,
        public: true,
        rawResponse: true,
        contentSecurityPolicy: DOCS_CSP,
      };
    }
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // No validator badge: it would send the document's URL to validator.swagger.io (and the CSP blocks it).
    uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null },
  });
  app.get('/openapi.json', { config: { public: true, rawResponse: true }, schema: { hide: true } }, async () => app.swagger());
}
