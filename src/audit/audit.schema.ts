import { Type, type Static } from '@sinclair/typebox';
import { BoundedPageOf, PageParams } from '../core/common.schema.js';
import { ACTIONS, ENTITY_TYPES } from './audit.record.js';

const literals = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)));

const Cursor = Type.String({ pattern: '^[0-9]{1,19}$', description: 'A record id; the feed continues after it' });
/** `YYYY-MM-DD` or `YYYY-MM-DD HH:mm:ss`, in the server's time zone. */
const TimeBound = (description: string) => Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}( \\d{2}:\\d{2}:\\d{2})?$', description });

/** One audit record (docs/api-rules.md#audit-trail-and-change-feed). */
export const AuditRecord = Type.Object(
  {
    id: Type.String({ description: 'The cursor: increases in commit order' }),
    time: Type.String({ description: '`YYYY-MM-DD HH:mm:ss.SSS` in the server time zone' }),
    tenantId: Type.String({ description: 'Whose data changed (for a failed login: the tenant tried)' }),
    userName: Type.String({ description: 'Who acted (for a failed login: the username tried)' }),
    userTenantId: Type.String({ description: "The acting user's tenant" }),
    action: literals(ACTIONS),
    entityType: literals(ENTITY_TYPES),
    entityId: Type.String(),
    requestId: Type.Union([Type.String(), Type.Null()]),
    ip: Type.Union([Type.String(), Type.Null()]),
    changes: Type.Record(Type.String(), Type.Unknown(), {
      description: 'Create: the new values; delete: the old ones; update and move: {field: {before, after}} of the changed fields',
    }),
  },
  { $id: 'AuditRecord' },
);

export const AuditListQuery = Type.Object({
  action: Type.Optional(literals(ACTIONS)),
  entityType: Type.Optional(literals(ENTITY_TYPES)),
  entityId: Type.Optional(Type.String({ maxLength: 64, description: 'Exact match' })),
  userName: Type.Optional(Type.String({ maxLength: 64, description: 'Substring match' })),
  tenantId: Type.Optional(Type.String({ pattern: '^[0-9]{6}$', description: 'Exact match, within what you may see' })),
  beginTime: Type.Optional(TimeBound('From (inclusive); a date alone means its start')),
  endTime: Type.Optional(TimeBound('Until (inclusive); a date alone means the whole day')),
  ...PageParams,
});

export const AuditPage = BoundedPageOf(Type.Ref('AuditRecord'));

export const ChangesQuery = Type.Object({
  after: Type.Optional(Cursor),
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
});

export const ChangesPage = Type.Object({
  events: Type.Array(Type.Ref('AuditRecord')),
  cursor: Type.String({ description: 'Send as `after` next time: the last event returned, or `after` when there was none' }),
});

export const StreamQuery = Type.Object({ after: Type.Optional(Cursor) });

export type AuditRecord = Static<typeof AuditRecord>;
export type AuditListQuery = Static<typeof AuditListQuery>;
