import type { Id } from '../core/ids.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { transaction } from '../db/retry.js';
import { requestActor } from '../identity/caller.js';
import { ifMatchOf } from '../core/version.js';
import { ScimError } from './scim.error.js';
import { parseFilter } from './scim.filter.js';
import { filterToSql } from './scim.filter.where.js';
import { USER_FILTER_ATTRIBUTES } from './scim.attributes.js';
import { scimBaseUrl, sendScim } from './scim.reply.js';
import { createScimUser, deleteScimUser, findScimUsers, getScimUser, patchScimUser, type ScimUserRow } from './scim.user.sql.js';
import { checkUserState, ENTERPRISE_USER_SCHEMA, stateFromBody, USER_SCHEMA } from './scim.user.state.js';
import { applyUserPatch } from './scim.user.patch.js';
import { IdParams, ListQuery, PatchBody, ResourceBody, WriteIdParams } from './scim.schema.js';
import { matchesIfNoneMatch } from '../core/version.js';
import { listResponse, startIndexAndCount, project, scimId } from './scim.resource.js';
import { routesPlugin } from '../http/routes.plugin.js';

// /scim/v2/Users (docs/scim.md#users): the tenant's users, for the key's
// tenant only. Every write goes through the REST API's write paths
// (scim.user.sql.ts), in one transaction.

/** A user as SCIM shows it (RFC 7643 §4.1, and the enterprise extension's read-only department). */
function userResource(row: ScimUserRow, base: string) {
  const location = `${base}/Users/${row.id}`;
  return {
    schemas: [USER_SCHEMA, ENTERPRISE_USER_SCHEMA],
    id: String(row.id),
    ...(row.externalId === null ? {} : { externalId: row.externalId }),
    userName: row.userName,
    name: {
      ...(row.givenName === null ? {} : { givenName: row.givenName }),
      ...(row.familyName === null ? {} : { familyName: row.familyName }),
      ...(row.nickName === '' ? {} : { formatted: row.nickName }),
    },
    displayName: row.nickName,
    active: row.active,
    emails: row.email === null ? [] : [{ value: row.email, type: 'work', primary: true }],
    phoneNumbers: row.phone === null ? [] : [{ value: row.phone, type: 'work' }],
    groups: row.deptId === null ? [] : [{ value: String(row.deptId), display: row.deptName, type: 'direct', $ref: `${base}/Groups/${row.deptId}` }],
    [ENTERPRISE_USER_SCHEMA]: row.deptName === null ? {} : { department: row.deptName },
    meta: {
      resourceType: 'User',
      created: row.created.toISOString(),
      lastModified: row.lastModified.toISOString(),
      location,
      version: row.version,
    },
  };
}

export const scimUserRoutes = routesPlugin<{ publicUrl?: string | undefined }>('scim-user-routes', async (app, { publicUrl }) => {
  const base = scimBaseUrl(publicUrl);
  const found = async (request: FastifyRequest, id: Id) => {
    const row = await getScimUser(request.sql, request.caller.tenantId, id);
    if (!row) throw new ScimError(404, undefined, `User ${id} not found`);
    return row;
  };
  /** Answers the user as it is now, with its ETag, shaped by the query's `attributes`. */
  const answer = async (request: FastifyRequest, reply: FastifyReply, query: ListQuery, id: Id, status: number) => {
    const row = await found(request, id);
    reply.header('etag', row.version);
    if (status === 201) reply.header('location', `${base(request)}/Users/${id}`);
    return sendScim(reply, status, project(userResource(row, base(request)), query));
  };

  app.get('/Users', { config: { permission: 'system:user:list' }, schema: { querystring: ListQuery } }, async (request, reply) => {
    const { query } = request;
    const where = query.filter === undefined ? undefined : filterToSql(request.sql, parseFilter(query.filter), USER_FILTER_ATTRIBUTES);
    const { startIndex, count } = startIndexAndCount(query);
    const { total, rows } = await findScimUsers(request.sql, request.caller.tenantId, where, startIndex, count);
    const resources = rows.map((row) => project(userResource(row, base(request)), query));
    return sendScim(reply, 200, listResponse(total, startIndex, resources));
  });

  app.get(
    '/Users/:id',
    { config: { permission: 'system:user:query' }, schema: { params: IdParams, querystring: ListQuery } },
    async (request, reply) => {
      const row = await found(request, scimId(request.params.id, 'User'));
      // etag is supported (/ServiceProviderConfig): a client holding the current version gets 304, no body.
      if (matchesIfNoneMatch(request.headers['if-none-match'], row.version)) return reply.code(304).header('etag', row.version).send();
      reply.header('etag', row.version);
      return sendScim(reply, 200, project(userResource(row, base(request)), request.query));
    },
  );

  app.post(
    '/Users',
    { config: { permission: 'system:user:add', changesAccess: true }, schema: { body: ResourceBody, querystring: ListQuery } },
    async (request, reply) => {
      const state = checkUserState(stateFromBody(request.body));
      const id = await transaction(request.sql, (tx) => createScimUser(tx, requestActor(request), state));
      return answer(request, reply, request.query, id, 201);
    },
  );

  app.put(
    '/Users/:id',
    {
      config: { permission: 'system:user:edit', changesAccess: true },
      schema: { params: WriteIdParams, body: ResourceBody, querystring: ListQuery },
    },
    async (request, reply) => {
      const id = scimId(request.params.id, 'User');
      const state = checkUserState(stateFromBody(request.body));
      await transaction(request.sql, (tx) => patchScimUser(tx, requestActor(request), id, () => state, ifMatchOf(request)));
      return answer(request, reply, request.query, id, 200);
    },
  );

  app.patch(
    '/Users/:id',
    { config: { permission: 'system:user:edit', changesAccess: true }, schema: { params: WriteIdParams, body: PatchBody, querystring: ListQuery } },
    async (request, reply) => {
      const id = scimId(request.params.id, 'User');
      const operations = request.body.Operations;
      await transaction(request.sql, (tx) =>
        patchScimUser(tx, requestActor(request), id, (current) => checkUserState(applyUserPatch(current, operations)), ifMatchOf(request)),
      );
      return answer(request, reply, request.query, id, 200);
    },
  );

  app.delete(
    '/Users/:id',
    { config: { permission: 'system:user:remove', changesAccess: true }, schema: { params: WriteIdParams } },
    async (request, reply) => {
      const id = scimId(request.params.id, 'User');
      await transaction(request.sql, (tx) => deleteScimUser(tx, requestActor(request), id, ifMatchOf(request)));
      return reply.code(204).send();
    },
  );
});
