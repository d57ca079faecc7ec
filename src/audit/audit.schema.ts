import { Type, type Static } from '@sinclair/typebox';
import { BoundedPageOf, PageParams, TenantCode } from '../core/common.schema.js';
import { propertiesOf } from '../db/fields.js';
import { RECORD_FIELDS } from './audit.fields.js';

const Cursor = Type.String({ pattern: '^[0-9]{1,19}$', description: 'A record id; the feed continues after it' });
/** `YYYY-MM-DD` or `YYYY-MM-DD HH:mm:ss`, in the server's time zone. */
const TimeBound = (description: string) => Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}( \\d{2}:\\d{2}:\\d{2})?$', description });

/** One audit record (docs/api-rules.md#audit-trail-and-change-feed), from its field list. */
export const AuditRecord = Type.Object(propertiesOf(RECORD_FIELDS), { $id: 'AuditRecord' });

export const AuditListQuery = Type.Object({
  action: Type.Optional(RECORD_FIELDS.action.schema),
  entityType: Type.Optional(RECORD_FIELDS.entityType.schema),
  entityId: Type.Optional(Type.String({ maxLength: 64, description: 'Exact match' })),
  userName: Type.Optional(Type.String({ maxLength: 64, description: 'Substring match' })),
  tenantId: Type.Optional(TenantCode('Exact match, within what you may see')),
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
