import { Type, type Static } from '@sinclair/typebox';
import { Nullable, PageOf, PageParams, Status } from '../core/common.schema.js';
import { propertiesOf } from '../db/fields.js';
import { ATTEMPT_FIELDS, ENDPOINT_FIELDS } from './webhook.fields.js';

// Webhook endpoints (docs/webhooks.md): one schema for the endpoint as read,
// the create and replace bodies derived from it; the fields themselves in
// webhook.fields.ts.

/** The endpoint as read. */
export const WebhookEndpoint = Type.Object(propertiesOf(ENDPOINT_FIELDS), { $id: 'WebhookEndpoint' });

export const WebhookCreate = Type.Object(
  {
    url: WebhookEndpoint.properties.url,
    events: Type.Optional(WebhookEndpoint.properties.events),
    description: Type.Optional(WebhookEndpoint.properties.description),
  },
  { $id: 'WebhookCreate', additionalProperties: false, examples: [{ url: 'https://hr.example.com/hooks/chart', events: ['dept.*', 'user.create'] }] },
);

/** Full replacement, like every PUT here; "0" again after a disable resumes delivery from the cursor. */
export const WebhookUpdate = Type.Object(
  {
    id: WebhookEndpoint.properties.id,
    url: WebhookEndpoint.properties.url,
    events: WebhookEndpoint.properties.events,
    description: WebhookEndpoint.properties.description,
    status: Status,
  },
  { $id: 'WebhookUpdate', additionalProperties: false },
);

const Secret = Type.String({ description: 'Shown once: `whsec_` + base64 of 32 random bytes' });

/** The create answer: the endpoint and, this once, its secret. */
export const WebhookCreated = Type.Composite([WebhookEndpoint, Type.Object({ secret: Secret })], { $id: 'WebhookCreated' });

export const WebhookSecret = Type.Object({
  secret: Secret,
  previousSecretUntil: Type.String({ description: 'Until when the old secret still signs too' }),
});

export const WebhookPage = PageOf(Type.Ref('WebhookEndpoint'));
export const WebhookPageQuery = Type.Object({ ...PageParams });

export const WebhookDelivery = Type.Object(propertiesOf(ATTEMPT_FIELDS), { $id: 'WebhookDelivery' });
export const WebhookDeliveryPage = PageOf(Type.Ref('WebhookDelivery'));

export const WebhookTestResult = Type.Object({
  status: Nullable(Type.Integer({ description: "The receiver's HTTP status; null when it did not answer" })),
  ms: Type.Integer(),
  body: Type.String({ description: 'The first 1 KB of the answer, or why there was none' }),
});

export const WebhookReplay = Type.Object(
  { after: Type.String({ pattern: '^[0-9]{1,19}$', description: 'An audit record id at or before the cursor; every later event is sent again' }) },
  { additionalProperties: false },
);

export type WebhookEndpoint = Static<typeof WebhookEndpoint>;
export type WebhookCreate = Static<typeof WebhookCreate>;
export type WebhookUpdate = Static<typeof WebhookUpdate>;
export type WebhookDelivery = Static<typeof WebhookDelivery>;
export type WebhookTestResult = Static<typeof WebhookTestResult>;
