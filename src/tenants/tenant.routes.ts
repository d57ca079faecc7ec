import { Type } from '@sinclair/typebox';
import { assert } from '../core/app.error.js';
import { IdParam, RefTo } from '../core/common.schema.js';
import { AUTHED, Created, responses, WITH_BODY } from '../http/envelope.schema.js';
import { PackageBo, PackageBoWrite, QuotaBo, RuleBo, Tenant, TenantCreate, TenantListQuery, TenantPage, TenantUpdate } from './tenant.schema.js';
import { requestActor } from '../identity/caller.js';
import { etagOf, ifMatchOf } from '../core/version.js';
import { createTenant, deleteTenant, getTenant, listTenants, updateTenant } from './tenant.sql.js';
import { transaction } from '../db/retry.js';
import { routesPlugin } from '../http/routes.plugin.js';

const tags = ['tenants'];

/** /system/tenant-api: the caller's tenant and the tenants below it. */
export const tenantRoutes = routesPlugin('tenant-routes', async (app) => {
  for (const schema of [PackageBo, PackageBoWrite, QuotaBo, RuleBo, Tenant, TenantCreate, TenantUpdate, TenantPage]) app.addSchema(schema);

  app.post(
    '/',
    {
      config: { permission: 'system:tenant:add', changesAccess: true },
      schema: {
        operationId: 'createTenant',
        summary: 'Create a child tenant',
        description: 'With username and password, also its root department and first admin user.',
        tags,
        body: RefTo(TenantCreate),
        response: responses(Created, [...WITH_BODY, ...AUTHED, 409]),
      },
    },
    async (request, reply) => {
      const id = await transaction(request.sql, (tx) => createTenant(tx, requestActor(request), request.body));
      reply.header('location', `/system/tenant-api/${id}`);
      return null;
    },
  );

  app.put(
    '/',
    {
      config: { permission: 'system:tenant:edit', changesAccess: true },
      schema: {
        operationId: 'updateTenant',
        summary: 'Replace a tenant',
        description: 'Full replacement; tenantId and tenantParent never change.',
        tags,
        body: RefTo(TenantUpdate),
        response: responses(Type.Null(), [...WITH_BODY, ...AUTHED, 404, 409, 412]),
      },
    },
    async (request) => {
      await transaction(request.sql, (tx) => updateTenant(tx, requestActor(request), request.body, ifMatchOf(request)));
      return null;
    },
  );

  app.get(
    '/list',
    {
      config: { permission: 'system:tenant:list' },
      schema: {
        operationId: 'listTenants',
        summary: 'Page through the tenants you can see',
        tags,
        querystring: TenantListQuery,
        response: responses(Type.Ref('TenantPage'), [400, ...AUTHED]),
      },
    },
    async (request) => listTenants(request.sql, request.caller, request.query),
  );

  app.get(
    '/:id',
    {
      config: { permission: 'system:tenant:query' },
      schema: {
        operationId: 'getTenant',
        summary: 'Get a tenant',
        tags,
        params: IdParam,
        response: responses(Type.Ref('Tenant'), [400, ...AUTHED, 404]),
      },
    },
    async (request, reply) => {
      const tenant = await getTenant(request.sql, request.caller, request.params.id);
      assert(tenant, 404, `Tenant ${request.params.id} not found`);
      reply.header('etag', etagOf(tenant));
      return tenant;
    },
  );

  app.delete(
    '/:id',
    {
      config: { permission: 'system:tenant:remove', changesAccess: true },
      schema: {
        operationId: 'deleteTenant',
        summary: 'Delete a tenant (logically)',
        tags,
        params: IdParam,
        response: responses(Type.Null(), [400, ...AUTHED, 404, 409, 412]),
      },
    },
    async (request) => {
      await transaction(request.sql, (tx) => deleteTenant(tx, requestActor(request), request.params.id, ifMatchOf(request)));
      return null;
    },
  );
});
