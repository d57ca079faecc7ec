import { Type } from '@sinclair/typebox';
import { Day, Nullable } from '../core/common.schema.js';
import { formatDateTime } from '../core/time.js';
import { AUDIT_FIELDS, field } from '../db/fields.js';

// An API key's fields, once: API name, column of sys_api_key, schema.
// apikey.schema.ts builds the schemas from this list and apikey.sql.ts its
// SELECT list and row mapping. The key and its hash are not here: the key is
// shown once, by the create answer, and its hash never leaves the database.

export const KEY_FIELDS = {
  id: field('key_id', Type.Integer({ description: 'The key id' })),
  name: field(
    'name',
    Type.String({
      minLength: 1,
      maxLength: 50,
      pattern: '^[^\\s](.*[^\\s])?$',
      description: 'Unique among the live keys of your tenant; audit records name the key `apikey:<name>`',
    }),
  ),
  role: field('role', Type.Union([Type.Literal('admin'), Type.Literal('user')], { description: 'What the key may do; never above your own role' })),
  expiresAt: field(
    'expires_at',
    Nullable(Type.String({ format: 'date', pattern: Day.pattern, description: 'The last day the key is honoured (`YYYY-MM-DD`); null: no end' })),
    { asText: true },
  ),
  createBy: AUDIT_FIELDS.createBy,
  createTime: AUDIT_FIELDS.createTime,
  lastUsedTime: field('last_used_time', Nullable(Type.String({ description: 'The minute the key was last honoured' })), { read: formatDateTime }),
};
