import type { FastifyError, FastifyInstance } from 'fastify';
import type { Sql } from '../db/database.js';
import { AppError } from '../core/app.error.js';
import { addJsonParser } from '../http/json.parser.js';
import { classify } from '../http/error.handler.js';
import { ScimError } from './scim.error.js';
import { SCIM_MEDIA_TYPE, sendScim } from './scim.reply.js';
import { scimDiscoveryRoutes } from './scim.discovery.routes.js';
import { scimUserRoutes } from './scim.users.routes.js';
import { scimGroupRoutes } from './scim.groups.routes.js';

// SCIM 2.0 (RFC 7643, RFC 7644) at /scim/v2, for identity providers
// (docs/scim.md). Everything SCIM speaks differently from the rest of the API
// is set here, for this prefix only: its media type, its error body instead
// of the envelope, and who may call it (an API key of role admin). The
// resources live in scim.users.routes.ts and scim.discovery.routes.ts.

const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/**
 * The scimType (RFC 7644 §3.12) of a refusal that did not name one: a 400 is
 * a value the service cannot take; a 409 is `uniqueness` when it is one (a
 * unique constraint, or a rule that says the name exists), and has none
 * otherwise (a quota reached is not a uniqueness conflict).
 */
function scimTypeOf(error: Error, status: number, detail: string): string | undefined {
  if (status === 400) return 'invalidValue';
  if (status !== 409) return undefined;
  const unique = (error as { code?: string }).code === '23505' || (error instanceof AppError && /already exists/.test(detail));
  return unique ? 'uniqueness' : undefined;
}

export async function scimPlugin(app: FastifyInstance, { sql }: { sql: Sql }): Promise<void> {
  // Bodies may be sent as application/scim+json (RFC 7644 §3.1) or plain JSON; both parse alike.
  addJsonParser(app, SCIM_MEDIA_TYPE);

  // Answers are SCIM documents, not envelopes; SCIM describes itself (the discovery routes), not in OpenAPI.
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), rawResponse: true };
    route.schema = { ...route.schema, hide: true };
  });

  // The global auth hook has admitted the caller and checked the route's permission; SCIM also needs a key.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.is404) return done();
    if (request.caller?.apiKeyId === undefined) {
      return done(new ScimError(403, undefined, "SCIM takes an API key of role admin (POST /system/apikey-api), not a person's token"));
    }
    if (request.caller.role !== 'admin')
      return done(new ScimError(403, undefined, `SCIM takes an API key of role admin; this key's role is "${request.caller.role}"`));
    done();
  });

  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (error instanceof ScimError) {
      request.log.info({ status: error.status, reason: error.detail }, 'request refused');
      return sendScim(reply, error.status, scimError(error.status, error.scimType, error.detail));
    }
    const [status, detail] = classify(error);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ status, reason: detail }, 'request refused');
    const scimType = scimTypeOf(error, status, detail);
    const invalidJson = (error as FastifyError).code === 'FST_ERR_CTP_INVALID_JSON_BODY' || /not valid JSON/.test(detail);
    return sendScim(
      reply,
      status,
      scimError(status, invalidJson ? 'invalidSyntax' : scimType, status >= 500 ? `${detail} (request id ${request.id})` : detail),
    );
  });

  await app.register(scimDiscoveryRoutes);
  await app.register(scimUserRoutes, { sql });
  await app.register(scimGroupRoutes, { sql });

  app.setNotFoundHandler(async (request, reply) =>
    sendScim(reply, 404, scimError(404, undefined, `No SCIM endpoint ${request.method} ${request.url.split('?')[0]}`)),
  );
}

function scimError(status: number, scimType: string | undefined, detail: string) {
  return { schemas: [ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail };
}
