import type { FastifyError } from 'fastify';
import { addJsonParser } from '../http/json.parser.js';
import { classify } from '../http/error.handler.js';
import { discardRestOfBody } from '../http/body.discard.js';
import { ScimError } from './scim.error.js';
import { ScimConflict } from './scim.conflict.js';
import { SCIM_MEDIA_TYPE, sendScim } from './scim.reply.js';
import { scimDiscoveryRoutes } from './scim.discovery.routes.js';
import { scimUserRoutes } from './scim.users.routes.js';
import { scimGroupRoutes } from './scim.groups.routes.js';
import { routesPlugin } from '../http/routes.plugin.js';

// SCIM 2.0 (RFC 7643, RFC 7644) at /scim/v2, for identity providers
// (docs/scim.md). Everything SCIM speaks differently from the rest of the API
// is set here, for this prefix only: its media type, its error body instead
// of the envelope, and who may call it (an API key of role admin). The
// resources live in scim.users.routes.ts, scim.groups.routes.ts and
// scim.discovery.routes.ts.

const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/**
 * A refusal that is not a ScimError, as SCIM words it (RFC 7644 §3.12): a
 * body that is not JSON or not shaped like a SCIM request is `invalidSyntax`;
 * any other 400 of a rule is `invalidValue`; a ScimConflict of the SCIM SQL
 * modules keeps its own keyword (`uniqueness`, `mutability`); a unique
 * constraint, or a rule that says the name exists, is 409 `uniqueness`; every
 * other rule of the REST API that refuses with 409 (a cycle, the depth limit,
 * a disabled parent, the account quota) is a value this service cannot take:
 * 400 `invalidValue`, as SCIM clients expect.
 */
function asScim(error: FastifyError | Error, status: number, detail: string): { status: number; scimType: string | undefined } {
  const fastify = error as FastifyError;
  if (fastify.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || /not valid JSON/.test(detail)) return { status, scimType: 'invalidSyntax' };
  if (fastify.validation && fastify.validationContext === 'body') return { status, scimType: 'invalidSyntax' };
  if (status === 400) return { status, scimType: 'invalidValue' };
  if (status !== 409) return { status, scimType: undefined };
  if (error instanceof ScimConflict) return { status, scimType: error.conflict };
  if ((error as { code?: string }).code === '23505' || /already exists/.test(detail)) return { status, scimType: 'uniqueness' };
  return { status: 400, scimType: 'invalidValue' };
}

/** `publicUrl`: PUBLIC_URL, the base of the URLs SCIM answers name (scimBaseUrl in scim.reply.ts); undefined: each request's own. */
export const scimPlugin = routesPlugin<{ publicUrl?: string | undefined }>('scim', async (app, { publicUrl }) => {
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
    const [classified, detail] = classify(error);
    if (classified >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ status: classified, reason: detail }, 'request refused');
    const { status, scimType } = asScim(error, classified, detail);
    if (status === 413) {
      // As the one error handler does: take the rest of the body in (bounded) so the client reads this answer, then close.
      await discardRestOfBody(request.raw);
      reply.header('connection', 'close');
    }
    return sendScim(reply, status, scimError(status, scimType, status >= 500 ? `${detail} (request id ${request.id})` : detail));
  });

  await app.register(scimDiscoveryRoutes, { publicUrl });
  await app.register(scimUserRoutes, { publicUrl });
  await app.register(scimGroupRoutes, { publicUrl });

  app.setNotFoundHandler(async (request, reply) =>
    sendScim(reply, 404, scimError(404, undefined, `No SCIM endpoint ${request.method} ${request.url.split('?')[0]}`)),
  );
});

function scimError(status: number, scimType: string | undefined, detail: string) {
  return { schemas: [ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail };
}
