import { Type } from '@sinclair/typebox';
import { assert } from '../core/app.error.js';
import { RefTo } from '../core/common.schema.js';
import { etagOf, ifMatchOf } from '../core/version.js';
import { AUTHED, Created, responses, WITH_BODY } from '../http/envelope.schema.js';
import { routesPlugin } from '../http/routes.plugin.js';
import { transaction } from '../db/retry.js';
import { requestActor } from '../identity/caller.js';
import { Package, PackageCreate, PackageIdParam, PackageIdsParam, PackageListQuery, PackagePage, PackageUpdate } from './package.schema.js';
import { createPackage, deletePackages, getPackage, listPackages, updatePackage } from './package.sql.js';

const tags = ['packages'];

/** /system/package-api: the platform's menu packages; the superadmin writes them, admins read them (docs/api-rules.md#packages). */
export const packageRoutes = routesPlugin('package-routes', async (app) => {
  for (const schema of [Package, PackageCreate, PackageUpdate, PackagePage]) app.addSchema(schema);

  app.post(
    '/',
    {
      config: { permission: 'system:package:add' },
      schema: {
        operationId: 'createPackage',
        summary: 'Create a package',
        tags,
        body: RefTo(PackageCreate),
        response: responses(Created, [...WITH_BODY, ...AUTHED, 409]),
      },
    },
    async (request, reply) => {
      const id = await transaction(request.sql, (tx) => createPackage(tx, requestActor(request), request.body));
      reply.header('location', `/system/package-api/${id}`);
      return null;
    },
  );

  app.put(
    '/',
    {
      config: { permission: 'system:package:edit' },
      schema: {
        operationId: 'updatePackage',
        summary: 'Replace a package',
        description: 'Full replacement. A change of menus reaches every live tenant on the package in the same transaction.',
        tags,
        body: RefTo(PackageUpdate),
        response: responses(Type.Null(), [...WITH_BODY, ...AUTHED, 404, 409, 412]),
      },
    },
    async (request) => {
      await transaction(request.sql, (tx) => updatePackage(tx, requestActor(request), request.body, ifMatchOf(request)));
      return null;
    },
  );

  app.get(
    '/list',
    {
      config: { permission: 'system:package:list' },
      schema: {
        operationId: 'listPackages',
        summary: 'Page through the live packages',
        tags,
        querystring: PackageListQuery,
        response: responses(Type.Ref('PackagePage'), [400, ...AUTHED]),
      },
    },
    async (request) => listPackages(request.sql, request.query),
  );

  app.get(
    '/:packageId',
    {
      config: { permission: 'system:package:query' },
      schema: {
        operationId: 'getPackage',
        summary: 'Get a package',
        tags,
        params: PackageIdParam,
        response: responses(Type.Ref('Package'), [400, ...AUTHED, 404]),
      },
    },
    async (request, reply) => {
      const pkg = await getPackage(request.sql, request.params.packageId);
      assert(pkg, 404, `Package ${request.params.packageId} not found`);
      reply.header('etag', etagOf(pkg));
      return pkg;
    },
  );

  app.delete(
    '/:packageIds',
    {
      config: { permission: 'system:package:remove' },
      schema: {
        operationId: 'deletePackages',
        summary: 'Delete packages (logically), all or none',
        description: 'Refused with 409 while a live tenant is on any of them.',
        tags,
        params: PackageIdsParam,
        response: responses(Type.Null(), [400, ...AUTHED, 404, 409, 412]),
      },
    },
    async (request) => {
      await transaction(request.sql, (tx) => deletePackages(tx, requestActor(request), request.params.packageIds, ifMatchOf(request)));
      return null;
    },
  );
});
