import { Type } from '@sinclair/typebox';
import { transaction } from '../db/retry.js';
import { assert } from '../core/app.error.js';
import { IdParam, RefTo } from '../core/common.schema.js';
import { parseOwnId } from '../core/ids.js';
import { AUTHED, responses, WITH_BODY } from '../http/envelope.schema.js';
import { requestActor } from '../identity/caller.js';
import { ApiKey, ApiKeyCreate, ApiKeyCreated, ApiKeyPage, ApiKeyPageQuery } from './apikey.schema.js';
import { createApiKey, getApiKey, listApiKeys, revokeApiKey } from './apikey.sql.js';
import { newApiKey } from './apikey.token.js';
import { routesPlugin } from '../http/routes.plugin.js';

const tags = ['api keys'];

/** /system/apikey-api: the caller's tenant's API keys (docs/security.md#api-keys). Admins only. */
export const apiKeyRoutes = routesPlugin('apikey-routes', async (app) => {
  for (const schema of [ApiKey, ApiKeyCreate, ApiKeyCreated]) app.addSchema(schema);
  const keyId = (raw: string) => parseOwnId(raw, 'API key');

  app.post(
    '/',
    {
      config: { permission: 'system:apikey:add', changesAccess: true },
      schema: {
        operationId: 'createApiKey',
        summary: 'Create an API key for your tenant',
        description: 'The answer carries the key, this once; only its hash is kept. The role is never above your own.',
        tags,
        body: RefTo(ApiKeyCreate),
        response: responses(Type.Ref('ApiKeyCreated'), [...WITH_BODY, ...AUTHED, 409]),
      },
    },
    async (request, reply) => {
      // A key's role is never above its creator's: the body may name only admin or user, and only admins reach this route.
      const actor = requestActor(request);
      const { key, hash } = newApiKey(actor.tenantId);
      const created = await transaction(request.sql, (tx) => createApiKey(tx, actor, request.body, hash));
      reply.header('location', `/system/apikey-api/${created.id}`);
      return { ...created, key };
    },
  );

  app.get(
    '/list',
    {
      config: { permission: 'system:apikey:list' },
      schema: {
        operationId: 'listApiKeys',
        summary: "Your tenant's API keys (not revoked), one page",
        tags,
        querystring: ApiKeyPageQuery,
        response: responses(ApiKeyPage, [400, ...AUTHED]),
      },
    },
    async (request) => listApiKeys(request.sql, request.caller.tenantId, request.query),
  );

  app.get(
    '/:id',
    {
      config: { permission: 'system:apikey:query' },
      schema: {
        operationId: 'getApiKey',
        summary: 'Get an API key (never the key itself)',
        tags,
        params: IdParam,
        response: responses(Type.Ref('ApiKey'), [400, ...AUTHED, 404]),
      },
    },
    async (request) => {
      const id = keyId(request.params.id);
      const key = await getApiKey(request.sql, request.caller.tenantId, id);
      assert(key, 404, `API key ${id} not found`);
      return key;
    },
  );

  app.delete(
    '/:id',
    {
      config: { permission: 'system:apikey:remove', changesAccess: true },
      schema: {
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description: 'Refused at once on this node, within 2 s on every node.',
        tags,
        params: IdParam,
        response: responses(Type.Null(), [400, ...AUTHED, 404]),
      },
    },
    async (request) => {
      await transaction(request.sql, (tx) => revokeApiKey(tx, requestActor(request), keyId(request.params.id)));
      return null;
    },
  );
});
