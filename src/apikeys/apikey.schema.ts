import { Type, type Static } from '@sinclair/typebox';
import { PageOf, PageParams } from '../core/common.schema.js';
import { propertiesOf } from '../db/fields.js';
import { KEY_FIELDS } from './apikey.fields.js';

// API keys (docs/security.md#api-keys): one schema for a key as read, from
// its field list; the create body and the create answer (with the key, shown
// once) derive from it.

export const ApiKey = Type.Object(propertiesOf(KEY_FIELDS), { $id: 'ApiKey' });

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
