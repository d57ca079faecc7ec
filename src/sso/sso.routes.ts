import { Type } from '@sinclair/typebox';
import { transaction } from '../db/retry.js';
import { assert } from '../core/app.error.js';
import { RefTo } from '../core/common.schema.js';
import { etagOf, ifMatchOf } from '../core/version.js';
import { AUTHED, responses, WITH_BODY } from '../http/envelope.schema.js';
import { routesPlugin } from '../http/routes.plugin.js';
import { requestActor } from '../identity/caller.js';
import type { AddressRule } from '../outbound/outbound.address.js';
import { publicBase } from '../http/public.url.js';
import { redirectUriOf } from './sso.rules.js';
import {
  SsoConnection,
  SsoConnectionCreate,
  SsoConnectionPage,
  SsoConnectionPageQuery,
  SsoConnectionUpdate,
  SsoIdParam,
  SsoPolicy,
  TenantParam,
} from './sso.schema.js';
import {
  createConnection,
  deleteConnection,
  getConnection,
  getPolicy,
  listConnections,
  setPolicy,
  updateConnection,
  type StoredConnection,
} from './sso.sql.js';

const tags = ['sso'];

/**
 * /system/sso-api: a tenant's connections to its identity providers and its
 * "SSO required" policy (docs/sso.md#connections), for the admins of that
 * tenant or of a tenant above it, and the superadmin. The client secret is
 * written, never read back.
 */
export const ssoRoutes = routesPlugin<{ rule: AddressRule; publicUrl?: string }>('sso-routes', async (app, { rule, publicUrl }) => {
  for (const schema of [SsoConnection, SsoConnectionCreate, SsoConnectionUpdate, SsoPolicy]) app.addSchema(schema);
  /** A connection as read: the stored fields and the redirect URI to register at the provider. */
  const withRedirect = (base: string, c: StoredConnection) => ({ ...c, redirectUri: redirectUriOf(base, c.id) });

  app.post(
    '/',
    {
      config: { permission: 'system:sso:add' },
      schema: {
        operationId: 'createSsoConnection',
        summary: 'Connect a tenant to its identity provider (OpenID Connect)',
        description: 'Answers the connection with the redirect URI to register at the provider. The client secret is never returned.',
        tags,
        body: RefTo(SsoConnectionCreate),
        response: responses(Type.Ref('SsoConnection'), [...WITH_BODY, ...AUTHED, 404]),
      },
    },
    async (request) => {
      const connection = await transaction(request.sql, (tx) => createConnection(tx, requestActor(request), request.body, rule));
      return withRedirect(publicBase(request, publicUrl), connection);
    },
  );

  app.put(
    '/',
    {
      config: { permission: 'system:sso:edit' },
      schema: {
        operationId: 'updateSsoConnection',
        summary: 'Replace an SSO connection',
        description: 'Full replacement; without clientSecret the stored one is kept. If-Match: the ETag of GET /{id}.',
        tags,
        body: RefTo(SsoConnectionUpdate),
        response: responses(Type.Null(), [...WITH_BODY, ...AUTHED, 404, 412]),
      },
    },
    async (request) => {
      await transaction(request.sql, (tx) => updateConnection(tx, requestActor(request), request.body, rule, ifMatchOf(request)));
      return null;
    },
  );

  app.get(
    '/list',
    {
      config: { permission: 'system:sso:list' },
      schema: {
        operationId: 'listSsoConnections',
        summary: 'The SSO connections you manage, one page: your tenant and every tenant below it (the superadmin: all), or tenantId alone',
        tags,
        querystring: Type.Composite([SsoConnectionPageQuery, Type.Object({ tenantId: Type.Optional(TenantParam.properties.tenantId) })]),
        response: responses(SsoConnectionPage, [400, ...AUTHED, 404]),
      },
    },
    async (request) => {
      const { tenantId, ...page } = request.query;
      const result = await listConnections(request.sql, request.caller, tenantId, page);
      const base = publicBase(request, publicUrl);
      return { total: result.total, rows: result.rows.map((c) => withRedirect(base, c)) };
    },
  );

  app.get(
    '/policy/:tenantId',
    {
      config: { permission: 'system:sso:query' },
      schema: {
        operationId: 'getSsoPolicy',
        summary: "Whether a tenant's users must sign in through its identity provider",
        tags,
        params: TenantParam,
        response: responses(Type.Ref('SsoPolicy'), [400, ...AUTHED, 404]),
      },
    },
    async (request) => getPolicy(request.sql, request.caller, request.params.tenantId),
  );

  app.put(
    '/policy/:tenantId',
    {
      config: { permission: 'system:sso:edit' },
      schema: {
        operationId: 'setSsoPolicy',
        summary: "Require single sign-on for a tenant's users (its admins keep their password)",
        tags,
        params: TenantParam,
        body: RefTo(SsoPolicy),
        response: responses(Type.Null(), [...WITH_BODY, ...AUTHED, 404]),
      },
    },
    async (request) => {
      await transaction(request.sql, (tx) => setPolicy(tx, requestActor(request), request.params.tenantId, request.body.ssoRequired));
      return null;
    },
  );

  app.get(
    '/:id',
    {
      config: { permission: 'system:sso:query' },
      schema: {
        operationId: 'getSsoConnection',
        summary: 'Get an SSO connection',
        description: 'The ETag is that of the stored connection (the redirect URI, made from PUBLIC_URL, is not part of it).',
        tags,
        params: SsoIdParam,
        response: responses(Type.Ref('SsoConnection'), [400, ...AUTHED, 404]),
      },
    },
    async (request, reply) => {
      const connection = await getConnection(request.sql, request.caller, request.params.id);
      assert(connection, 404, `SSO connection ${request.params.id} not found`);
      reply.header('etag', etagOf(connection));
      return withRedirect(publicBase(request, publicUrl), connection);
    },
  );

  app.delete(
    '/:id',
    {
      config: { permission: 'system:sso:remove' },
      schema: {
        operationId: 'deleteSsoConnection',
        summary: 'Delete an SSO connection, its links and its sign-ins in flight',
        description: 'Its people and their sessions stay.',
        tags,
        params: SsoIdParam,
        response: responses(Type.Null(), [400, ...AUTHED, 404, 412]),
      },
    },
    async (request) => {
      await transaction(request.sql, (tx) => deleteConnection(tx, requestActor(request), request.params.id, ifMatchOf(request)));
      return null;
    },
  );
});
