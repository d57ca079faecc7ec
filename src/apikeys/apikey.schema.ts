import { Type, type Static } from '@sinclair/typebox';
import { Day, Nullable, PageOf, PageParams } from '../core/common.schema.js';

// API keys (docs/security.md#api-keys): one schema for a key as read; the
// create body and the create answer (with the key, shown once) derive from it.

export const ApiKey = Type.Object(
  {
    id: Type.Integer({ description: 'The key id' }),
    name: Type.String({
      minLength: 1,
      maxLength: 50,
      pattern: '^[^\\s](.*[^\\s])?$',
      description: 'Unique among the live keys of your tenant; audit records name the key `apikey:<name>`',
    }),
    role: Type.Union([Type.Literal('admin'), Type.Literal('user')], { description: 'What the key may do; never above your own role' }),
    expiresAt: Nullable(
      Type.String({ format: 'date', pattern: Day.pattern, description: 'The last day the key is honoured (`YYYY-MM-DD`); null: no end' }),
    ),
    createBy: Type.String(),
    createTime: Type.String(),
    lastUsedTime: Nullable(Type.String({ description: 'The minute the key was last honoured' })),
  },
  { $id: 'ApiKey' },
);

export const ApiKeyCreate = Type.Object(
  {
    name: ApiKey.properties.name,
    role: ApiKey.properties.role,
    expiresAt: Type.Optional(ApiKey.properties.expiresAt),
  },
  { $id: 'ApiKeyCreate', additionalProperties: false, examples: [{ name: 'hr-sync', role: 'admin', expiresAt: '2027-12-31' }] },
);

/** The create answer: the key, this once (only its hash is kept). */
export const ApiKeyCreated = Type.Object(
  {
    id: ApiKey.properties.id,
    name: ApiKey.properties.name,
    role: ApiKey.properties.role,
    key: Type.String({ description: 'Shown once: send it as `Authorization: Bearer <key>`' }),
    expiresAt: ApiKey.properties.expiresAt,
    createTime: ApiKey.properties.createTime,
  },
  { $id: 'ApiKeyCreated' },
);

export const ApiKeyPage = PageOf(Type.Ref('ApiKey'));
export const ApiKeyPageQuery = Type.Object({ ...PageParams });

export type ApiKey = Static<typeof ApiKey>;
export type ApiKeyCreate = Static<typeof ApiKeyCreate>;
export type ApiKeyCreated = Static<typeof ApiKeyCreated>;
