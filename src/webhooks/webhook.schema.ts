import { Type, type Static } from '@sinclair/typebox';
import { Nullable, PageOf, PageParams, Status } from '../core/common.schema.js';

// Webhook endpoints (docs/webhooks.md): one schema for the endpoint as read,
// the create and replace bodies derived from it.

const ACTION_PATTERN = '^[a-z]+(\\.[a-z_]+|\\.\\*)$';

/** Only http(s) URLs of at most 2 KB; which addresses they may reach is checked on every connection (webhook.address.ts). */
const Url = Type.String({
  minLength: 8,
  maxLength: 2048,
  pattern: '^[hH][tT][tT][pP][sS]?://',
  description: 'https:// (http:// only to an address in WEBHOOK_ALLOWED_CIDRS)',
});

export const WebhookEndpoint = Type.Object(
  {
    id: Type.Integer({ description: 'The endpoint id' }),
    url: Url,
    events: Type.Array(Type.String({ pattern: ACTION_PATTERN, maxLength: 64 }), {
      maxItems: 50,
      uniqueItems: true,
      description: 'Action names (`dept.move`) or prefixes (`dept.*`); empty: every action',
    }),
    description: Type.String({ maxLength: 500 }),
    status: Status,
    disabledReason: Nullable(Type.String({ description: 'Why the service disabled it: `410 Gone`, `retries exhausted`, `cursor expired`' })),
    cursor: Type.String({ description: 'The audit record id after which delivery continues' }),
    failures: Type.Integer({ description: 'Failed attempts at the next record so far' }),
    nextAttemptTime: Nullable(Type.String({ description: 'When the next record is tried again (after a failure)' })),
    lastError: Nullable(Type.String()),
    createBy: Type.String(),
    createTime: Type.String(),
    updateBy: Nullable(Type.String()),
    updateTime: Nullable(Type.String()),
  },
  { $id: 'WebhookEndpoint' },
);

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

export const WebhookDelivery = Type.Object(
  {
    eventId: Type.String({ description: 'The webhook-id header: `audit_<record id>`, or `test_...` for a test' }),
    attempt: Type.Integer({ description: '1 for the first try of an event' }),
    time: Type.String(),
    statusCode: Nullable(Type.Integer({ description: "The receiver's HTTP status; null when none came" })),
    error: Nullable(Type.String({ description: 'Why no 2xx: a status, a timeout, a refused address, ...' })),
    ms: Type.Integer(),
    response: Type.String({ description: 'The first 1 KB of the answer' }),
  },
  { $id: 'WebhookDelivery' },
);
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
