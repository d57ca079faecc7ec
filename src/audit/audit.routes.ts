import { Type } from '@sinclair/typebox';
import { assert } from '../core/app.error.js';
import { responses } from '../http/envelope.schema.js';
import type { AuditFeed } from './audit.feed.js';
import { AuditPage, AuditListQuery, AuditRecord, ChangesPage, ChangesQuery, StreamQuery } from './audit.schema.js';
import { changesAfter, listAudit } from './audit.sql.js';
import type { AuditStreams } from './audit.stream.js';
import { routesPlugin } from '../http/routes.plugin.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Holds its connection open (the audit stream): exempt from request deadlines, ended at shutdown. */
    longLived?: boolean;
  }
}

const tags = ['audit'];
const AUDIT_ERRORS = [400, 401, 403] as const;

/** /system/audit-api: the audit trail, its cursor feed and its live stream. Admins only. */
export const auditRoutes = routesPlugin<{ feed: AuditFeed; streams: AuditStreams }>('audit-routes', async (app, { feed, streams }) => {
  app.addSchema(AuditRecord);

  app.get(
    '/list',
    {
      config: { permission: 'monitor:operlog:list' },
      schema: {
        operationId: 'listAuditRecords',
        summary: 'Audit records visible to the caller, filtered, newest first',
        tags,
        querystring: AuditListQuery,
        response: responses(AuditPage, [...AUDIT_ERRORS]),
      },
    },
    async (request) => {
      await feed.sequence();
      return listAudit(request.sql, request.caller, request.query);
    },
  );

  app.get(
    '/changes',
    {
      config: { permission: 'monitor:operlog:list' },
      schema: {
        operationId: 'listAuditChanges',
        summary: 'The change feed: records after a cursor, in commit order',
        tags,
        querystring: ChangesQuery,
        response: responses(ChangesPage, [...AUDIT_ERRORS]),
      },
    },
    async (request) => {
      const { after, limit } = request.query;
      await feed.sequence();
      const events = await changesAfter(request.sql, request.caller, after, limit);
      return { events, cursor: events.at(-1)?.id ?? after ?? '0' };
    },
  );

  app.get(
    '/stream',
    {
      config: { permission: 'monitor:operlog:list', rawResponse: true, longLived: true },
      schema: {
        operationId: 'streamAuditChanges',
        summary: 'The change feed as Server-Sent Events (event: audit, id: cursor); resumes after Last-Event-ID or ?after=',
        tags,
        querystring: StreamQuery,
        headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ description: 'Resume after this record id' })) }),
        response: responses(
          Type.Unsafe<string>({
            description: 'An open text/event-stream: one `event: audit` per record, a comment line at least every 15 s',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          }),
          [...AUDIT_ERRORS],
        ),
      },
    },
    async (request, reply) => {
      const header = request.headers['last-event-id'];
      assert(header === undefined || /^[0-9]{1,19}$/.test(header), 400, 'Last-Event-ID must be a record id (digits)');
      await feed.sequence();
      streams.open(reply, request.caller, header ?? request.query.after);
      return reply;
    },
  );
});
