import { Type } from '@sinclair/typebox';
import type { Row } from 'postgres';
import { formatDateTimeMs } from '../core/time.js';
import type { Db } from '../db/database.js';
import { field, fromRow, selectList } from '../db/fields.js';
import { ACTIONS, ENTITY_TYPES } from './audit.record.js';

// An audit record's fields, once: API name, column of audit_log, schema.
// audit.schema.ts builds AuditRecord from this list, and every read of
// records (the list, the feed, the stream, the webhooks' deliveries) selects
// and maps them through recordColumns and toAuditRecord.

const literals = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)));

export const RECORD_FIELDS = {
  id: field('position', Type.String({ description: 'The cursor: increases in commit order' }), { asText: true }),
  time: field('time', Type.String({ description: '`YYYY-MM-DD HH:mm:ss.SSS` in the server time zone' }), { read: formatDateTimeMs }),
  tenantId: field('tenant_id', Type.String({ description: 'Whose data changed (for a failed login: the tenant tried)' })),
  userName: field('user_name', Type.String({ description: 'Who acted (for a failed login: the username tried)' })),
  userTenantId: field('user_tenant_id', Type.String({ description: "The acting user's tenant" })),
  action: field('action', literals(ACTIONS)),
  entityType: field('entity_type', literals(ENTITY_TYPES)),
  entityId: field('entity_id', Type.String()),
  requestId: field('request_id', Type.Union([Type.String(), Type.Null()])),
  ip: field('ip', Type.Union([Type.String(), Type.Null()])),
  changes: field(
    'changes',
    Type.Record(Type.String(), Type.Unknown(), {
      description: 'Create: the new values; delete: the old ones; update and move: {field: {before, after}} of the changed fields',
    }),
  ),
};

/** The record's columns of the audit_log row `a`, keyed by API name. */
export const recordColumns = (sql: Db) => selectList(sql, 'a', RECORD_FIELDS);

/** A row read with recordColumns, as the API answers it. */
export const toAuditRecord = (row: Row) => fromRow(row, RECORD_FIELDS);
