import type { Id } from '../core/ids.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { transaction } from '../db/retry.js';
import { requestActor } from '../identity/caller.js';
import { ifMatchOf } from '../core/version.js';
import { ScimError } from './scim.error.js';
import { parseFilter } from './scim.filter.js';
import { filterToSql } from './scim.filter.where.js';
import { GROUP_FILTER_ATTRIBUTES } from './scim.attributes.js';
import { scimBaseUrl, sendScim } from './scim.reply.js';
import { IdParams, ListQuery, PatchBody, ResourceBody, WriteIdParams } from './scim.schema.js';
import { matchesIfNoneMatch } from '../core/version.js';
import { listResponse, startIndexAndCount, project, scimId } from './scim.resource.js';
import { createScimGroup, deleteScimGroup, findScimGroups, getScimGroup, patchScimGroup, type ScimGroupRow } from './scim.group.sql.js';
import { checkGroupState, DEPT_EXTENSION, groupFromBody, GROUP_SCHEMA } from './scim.group.state.js';
import { applyGroupPatch } from './scim.group.patch.js';
import { routesPlugin } from '../http/routes.plugin.js';

// /scim/v2/Groups (docs/scim.md#groups): the tenant's departments, for the
// key's tenant only; writes through the department and user write paths
// (scim.group.sql.ts), in one transaction.

/** A department as a SCIM Group, with the department extension. */
function groupResource(row: ScimGroupRow, base: string) {
  return {
    schemas: [GROUP_SCHEMA, DEPT_EXTENSION],
    id: String(row.id),
    ...(row.externalId === null ? {} : { externalId: row.externalId }),
    displayName: row.displayName,
    members: row.members.map((m) => ({ value: String(m.id), display: m.userName, type: 'User', $ref: `${base}/Users/${m.id}` })),
    [DEPT_EXTENSION]: {
      parentId: row.parentId === 0 ? null : String(row.parentId),
      orderNum: row.orderNum,
      leader: row.leader,
      phone: row.phone,
      email: row.email,
      status: row.status,
      ancestors: row.ancestors,
    },
    meta: {
      resourceType: 'Group',
      created: row.created.toISOString(),
      lastModified: row.lastModified.toISOString(),
      location: `${base}/Groups/${row.id}`,
      version: row.version,
    },
  };
}

export const scimGroupRoutes = routesPlugin<{ publicUrl?: string | undefined }>('scim-group-routes', async (app, { publicUrl }) => {
  const base = scimBaseUrl(publicUrl);
  /** Answers the group as it is now, with its ETag, shaped by the query's `attributes`. */
  const answer = async (request: FastifyRequest, reply: FastifyReply, query: ListQuery, id: Id, status: number) => {
    const row = await getScimGroup(request.sql, request.caller.tenantId, id);
    if (!row) throw new ScimError(404, undefined, `Group ${id} not found`);
    if (status === 200 && request.method === 'GET' && matchesIfNoneMatch(request.headers['if-none-match'], row.version)) {
      return reply.code(304).header('etag', row.version).send();
    }
    reply.header('etag', row.version);
    if (status === 201) reply.header('location', `${base(request)}/Groups/${id}`);
    return sendScim(reply, status, project(groupResource(row, base(request)), query));
  };

  app.get('/Groups', { config: { permission: 'system:dept:list' }, schema: { querystring: ListQuery } }, async (request, reply) => {
    const { query } = request;
    const where = query.filter === undefined ? undefined : filterToSql(request.sql, parseFilter(query.filter), GROUP_FILTER_ATTRIBUTES);
    const { startIndex, count } = startIndexAndCount(query);
    const { total, rows } = await findScimGroups(request.sql, request.caller.tenantId, where, startIndex, count);
    return sendScim(
      reply,
      200,
      listResponse(
        total,
        startIndex,
        rows.map((row) => project(groupResource(row, base(request)), query)),
      ),
    );
  });

  app.get(
    '/Groups/:id',
    { config: { permission: 'system:dept:query' }, schema: { params: IdParams, querystring: ListQuery } },
    async (request, reply) => answer(request, reply, request.query, scimId(request.params.id, 'Group'), 200),
  );

  app.post(
    '/Groups',
    { config: { permission: 'system:dept:add', changesAccess: true }, schema: { body: ResourceBody, querystring: ListQuery } },
    async (request, reply) => {
      const state = checkGroupState(groupFromBody(request.body));
      const id = await transaction(request.sql, (tx) => createScimGroup(tx, requestActor(request), state));
      return answer(request, reply, request.query, id, 201);
    },
  );

  app.put(
    '/Groups/:id',
    {
      config: { permission: 'system:dept:edit', changesAccess: true },
      schema: { params: WriteIdParams, body: ResourceBody, querystring: ListQuery },
    },
    async (request, reply) => {
      const id = scimId(request.params.id, 'Group');
      const state = checkGroupState(groupFromBody(request.body));
      await transaction(request.sql, (tx) => patchScimGroup(tx, requestActor(request), id, () => state, ifMatchOf(request)));
      return answer(request, reply, request.query, id, 200);
    },
  );

  app.patch(
    '/Groups/:id',
    { config: { permission: 'system:dept:edit', changesAccess: true }, schema: { params: WriteIdParams, body: PatchBody, querystring: ListQuery } },
    async (request, reply) => {
      const id = scimId(request.params.id, 'Group');
      const operations = request.body.Operations;
      await transaction(request.sql, (tx) =>
        patchScimGroup(tx, requestActor(request), id, (current) => checkGroupState(applyGroupPatch(current, operations)), ifMatchOf(request)),
      );
      return answer(request, reply, request.query, id, 200);
    },
  );

  app.delete(
    '/Groups/:id',
    { config: { permission: 'system:dept:remove', changesAccess: true }, schema: { params: WriteIdParams } },
    async (request, reply) => {
      const id = scimId(request.params.id, 'Group');
      await transaction(request.sql, (tx) => deleteScimGroup(tx, requestActor(request), id, ifMatchOf(request)));
      return reply.code(204).send();
    },
  );
});
