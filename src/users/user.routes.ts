import { Type } from '@sinclair/typebox';
import { assert } from '../core/app.error.js';
import { IdParam, IdsParam, RefTo } from '../core/common.schema.js';
import { AUTHED, Created, responses, WITH_BODY } from '../http/envelope.schema.js';
import { requestActor } from '../identity/caller.js';
import { parseId, parseIds } from '../core/ids.js';
import { assertIfMatchFits, etagOf, ifMatchOf } from '../core/version.js';
import { User, UserCreate, UserListQuery, UserUpdate } from './user.schema.js';
import { createUser, deleteUsers, getUser, listUsers, updateUser } from './user.sql.js';
import { transaction } from '../db/retry.js';
import { routesPlugin } from '../http/routes.plugin.js';

const tags = ['users'];

/** /system/user-api: accounts of the caller's own tenant, managed by its admins. */
export const userRoutes = routesPlugin('user-routes', async (app) => {
  for (const schema of [User, UserCreate, UserUpdate]) app.addSchema(schema);

  app.post(
    '/',
    {
      config: { permission: 'system:user:add', changesAccess: true },
      schema: {
        operationId: 'createUser',
        summary: 'Create a user in your tenant',
        tags,
        body: RefTo(UserCreate),
        response: responses(Created, [...WITH_BODY, ...AUTHED, 409]),
      },
    },
    async (request, reply) => {
      const userId = await transaction(request.sql, (tx) => createUser(tx, requestActor(request), request.body));
      reply.header('location', `/system/user-api/${userId}`);
      return null;
    },
  );

  app.put(
    '/',
    {
      config: { permission: 'system:user:edit', changesAccess: true },
      schema: {
        operationId: 'updateUser',
        summary: 'Replace a user',
        description: 'Full replacement; the password changes only when sent, and then every token of the user is revoked.',
        tags,
        body: RefTo(UserUpdate),
        response: responses(Type.Null(), [...WITH_BODY, ...AUTHED, 404, 409, 412]),
      },
    },
    async (request) => {
      await transaction(request.sql, (tx) => updateUser(tx, requestActor(request), request.body, ifMatchOf(request)));
      return null;
    },
  );

  app.get(
    '/list',
    {
      config: { permission: 'system:user:list' },
      schema: {
        operationId: 'listUsers',
        summary: 'List the live users of your tenant',
        tags,
        querystring: UserListQuery,
        response: responses(Type.Array(Type.Ref('User')), [400, ...AUTHED]),
      },
    },
    async (request) => listUsers(request.sql, request.caller.tenantId, request.query),
  );

  app.get(
    '/:id',
    {
      config: { permission: 'system:user:query' },
      schema: { operationId: 'getUser', summary: 'Get a user', tags, params: IdParam, response: responses(Type.Ref('User'), [400, ...AUTHED, 404]) },
    },
    async (request, reply) => {
      const id = parseId(request.params.id, 'User');
      const user = await getUser(request.sql, request.caller.tenantId, id);
      assert(user, 404, `User ${id} not found`);
      reply.header('etag', etagOf(user));
      return user;
    },
  );

  app.delete(
    '/:ids',
    {
      config: { permission: 'system:user:remove', changesAccess: true },
      schema: {
        operationId: 'deleteUsers',
        summary: 'Delete one user or several (comma-separated ids, all or nothing)',
        tags,
        params: IdsParam,
        response: responses(Type.Null(), [400, ...AUTHED, 404, 409, 412]),
      },
    },
    async (request) => {
      const ids = parseIds(request.params.ids, 'User');
      assertIfMatchFits(ifMatchOf(request), ids);
      await transaction(request.sql, (tx) => deleteUsers(tx, requestActor(request), ids, ifMatchOf(request)));
      return null;
    },
  );
});
