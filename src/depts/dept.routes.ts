import { Type } from '@sinclair/typebox';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { assert } from '../core/app.error.js';
import { IdParam, IdsParam, RefTo } from '../core/common.schema.js';
import { AUTHED, Created, responses, WITH_BODY } from '../http/envelope.schema.js';
import { REVALIDATE } from '../http/headers.plugin.js';
import { requestActor } from '../identity/caller.js';
import { parseId, parseIds } from '../core/ids.js';
import { assertIfMatchFits, etagOfText, ifMatchOf } from '../core/version.js';
import { Dept, DeptCreate, DeptList, DeptListQuery, DeptNode, DeptTree, DeptUpdate } from './dept.schema.js';
import { createDept, deleteDepts, getDeptText, listParentChoices, updateDept } from './dept.sql.js';
import type { CacheCounts } from '../core/cache.counts.js';
import { chartEtag, chartVersion, type ChartKind } from './dept.chart.js';
import { ChartCache } from './dept.chart.cache.js';
import { matchesIfNoneMatch } from '../core/version.js';
import { transaction } from '../db/retry.js';
import { routesPlugin } from '../http/routes.plugin.js';

const tags = ['departments'];

/** /system/dept-api: HTTP only. Every call acts in the caller's own tenant. */
export const deptRoutes = routesPlugin<{ chartCacheBytes: number; chartCacheCounts?: CacheCounts }>(
  'dept-routes',
  async (app, { chartCacheBytes, chartCacheCounts }) => {
    for (const schema of [Dept, DeptNode, DeptCreate, DeptUpdate]) app.addSchema(schema);

    // list and tree: ETag of the tenant's chart version, 304 on a match, else
    // the cached envelope (rawResponse: the bytes already carry it).
    const charts = new ChartCache(chartCacheBytes, chartCacheCounts);
    const notModified = { 304: Type.Null({ description: "Not modified: If-None-Match names the tenant's current chart" }) };
    async function chart(request: FastifyRequest, reply: FastifyReply, kind: ChartKind, query: DeptListQuery) {
      const { tenantId } = request.caller;
      const version = await chartVersion(request.sql, tenantId);
      const etag = chartEtag(tenantId, version, kind, query);
      if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).header('etag', etag).send();
      const found = await charts.get(request.sql, tenantId, version, kind, query);
      // Its chunks may be written again once this response is done with them: sent, or its connection gone.
      reply.raw.once('close', found.release);
      reply.header('etag', found.etag).header('content-type', 'application/json; charset=utf-8');
      // A chart of over 1 MiB is sent chunk by chunk from the cache, never joined into one more copy.
      if (found.body.length === 1) return reply.send(found.body[0]);
      return reply.header('content-length', found.bytes).send(Readable.from(found.body, { objectMode: false }));
    }

    app.post(
      '/',
      {
        config: { permission: 'system:dept:add' },
        schema: {
          operationId: 'createDept',
          summary: 'Create a department',
          tags,
          body: RefTo(DeptCreate),
          response: responses(Created, [...WITH_BODY, ...AUTHED, 409]),
        },
      },
      async (request, reply) => {
        const deptId = await transaction(request.sql, (tx) => createDept(tx, requestActor(request), request.body));
        // A create answers data: null (docs/api-rules.md#requests-and-answers); the new id travels in Location.
        reply.header('location', `/system/dept-api/${deptId}`);
        return null;
      },
    );

    app.put(
      '/',
      {
        config: { permission: 'system:dept:edit' },
        schema: {
          operationId: 'updateDept',
          summary: 'Replace a department (a move when parentId changes)',
          description: 'Full replacement: optional fields not sent return to their defaults.',
          tags,
          body: RefTo(DeptUpdate),
          response: responses(Type.Null(), [...WITH_BODY, ...AUTHED, 404, 409, 412]),
        },
      },
      async (request) => {
        await transaction(request.sql, (tx) => updateDept(tx, requestActor(request), request.body, ifMatchOf(request)));
        return null;
      },
    );

    app.get(
      '/list',
      {
        config: { permission: 'system:dept:list', cacheControl: REVALIDATE, rawResponse: true },
        schema: {
          operationId: 'listDepts',
          summary: 'List live departments (flat)',
          description: 'Ordered by parentId, orderNum, deptId. ETag of the chart; 304 to a matching If-None-Match.',
          tags,
          querystring: DeptListQuery,
          response: { ...responses(DeptList, [400, ...AUTHED]), ...notModified },
        },
      },
      async (request, reply) => chart(request, reply, 'list', request.query),
    );

    app.get(
      '/tree',
      {
        config: { permission: 'system:dept:list', cacheControl: REVALIDATE, rawResponse: true },
        schema: {
          operationId: 'deptTree',
          summary: 'The live department tree (nested children)',
          description: 'ETag of the chart; 304 to a matching If-None-Match.',
          tags,
          response: { ...responses(DeptTree, AUTHED), ...notModified },
        },
      },
      async (request, reply) => chart(request, reply, 'tree', {}),
    );

    app.get(
      '/list/exclude/:id',
      {
        config: { permission: 'system:dept:list' },
        schema: {
          operationId: 'listDeptParentChoices',
          summary: 'Departments that may become the parent of this one',
          description: 'Every live department but this one and its descendants.',
          tags,
          params: IdParam,
          response: responses(DeptList, [400, ...AUTHED, 404]),
        },
      },
      async (request) => listParentChoices(request.sql, request.caller.tenantId, parseId(request.params.id, 'Department')),
    );

    app.get(
      '/:id',
      {
        config: { permission: 'system:dept:query' },
        schema: {
          operationId: 'getDept',
          summary: 'Get a department',
          tags,
          params: IdParam,
          response: responses(Type.Ref('Dept'), [400, ...AUTHED, 404]),
        },
      },
      async (request, reply) => {
        const id = parseId(request.params.id, 'Department');
        // The record as JSON text (dept.json.ts), sent as is (Fastify's serializer leaves a string alone; the
        // envelope hook wraps it and sets the JSON content type) and hashed for its ETag.
        const dept = await getDeptText(request.sql, request.caller.tenantId, id);
        assert(dept, 404, `Department ${id} not found`);
        reply.header('etag', etagOfText(dept));
        return dept;
      },
    );

    app.delete(
      '/:ids',
      {
        config: { permission: 'system:dept:remove' },
        schema: {
          operationId: 'deleteDepts',
          summary: 'Delete one department or several (comma-separated ids, all or nothing)',
          tags,
          params: IdsParam,
          response: responses(Type.Null(), [400, ...AUTHED, 404, 409, 412]),
        },
      },
      async (request) => {
        const ids = parseIds(request.params.ids, 'Department');
        assertIfMatchFits(ifMatchOf(request), ids);
        await transaction(request.sql, (tx) => deleteDepts(tx, requestActor(request), ids, ifMatchOf(request)));
        return null;
      },
    );
  },
);
