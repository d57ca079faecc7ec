import { Type } from '@sinclair/typebox';
import { Nullable, Status } from '../core/common.schema.js';
import { formatDateTime, formatDateTimeMs } from '../core/time.js';
import { AUDIT_FIELDS, field } from '../db/fields.js';

// The fields of a webhook endpoint and of an attempt, once: API name, column
// (of webhook_endpoint, of webhook_delivery), schema. webhook.schema.ts
// builds the schemas from these lists and webhook.sql.ts its SELECT lists
// and row mappings. The endpoint's secrets and lease are not here: they are
// never answered (the secret is shown once, by the create and rotate answers).

const ACTION_PATTERN = '^[a-z]+(\\.[a-z_]+|\\.\\*)$';

/** Only http(s) URLs of at most 2 KB; which addresses they may reach is checked on every connection (src/outbound/outbound.address.ts). */
const Url = Type.String({
  minLength: 8,
  maxLength: 2048,
  pattern: '^[hH][tT][tT][pP][sS]?://',
  description: 'https:// (http:// only to an address in OUTBOUND_ALLOWED_CIDRS)',
});

export const ENDPOINT_FIELDS = {
  id: field('endpoint_id', Type.Integer({ description: 'The endpoint id' })),
  url: field('url', Url),
  events: field(
    'events',
    Type.Array(Type.String({ pattern: ACTION_PATTERN, maxLength: 64 }), {
      maxItems: 50,
      uniqueItems: true,
      description: 'Action names (`dept.move`) or prefixes (`dept.*`); empty: every action',
    }),
  ),
  description: field('description', Type.String({ maxLength: 500 })),
  status: field('status', Status),
  disabledReason: field(
    'disabled_reason',
    Nullable(Type.String({ description: 'Why the service disabled it: `410 Gone`, `retries exhausted`, `cursor expired`' })),
  ),
  cursor: field('cursor', Type.String({ description: 'The audit record id after which delivery continues' }), { asText: true }),
  failures: field('failures', Type.Integer({ description: 'Failed attempts at the next record so far' })),
  // retry_at is shown only while the head record is failing.
  nextAttemptTime: field('retry_at', Nullable(Type.String({ description: 'When the next record is tried again (after a failure)' })), {
    read: (retryAt: Date | null, row) => (Number(row.failures) > 0 && retryAt ? formatDateTime(retryAt) : null),
  }),
  lastError: field('last_error', Nullable(Type.String())),
  createBy: AUDIT_FIELDS.createBy,
  createTime: AUDIT_FIELDS.createTime,
  // NULL until the first change (the departments' is '' instead).
  updateBy: field('update_by', Nullable(Type.String())),
  updateTime: AUDIT_FIELDS.updateTime,
};

/** One row of an endpoint's attempt log. */
export const ATTEMPT_FIELDS = {
  eventId: field('event_id', Type.String({ description: 'The webhook-id header: `audit_<record id>`, or `test_...` for a test' })),
  attempt: field('attempt', Type.Integer({ description: '1 for the first try of an event' })),
  time: field('time', Type.String(), { read: formatDateTimeMs }),
  statusCode: field('status_code', Nullable(Type.Integer({ description: "The receiver's HTTP status; null when none came" }))),
  error: field('error', Nullable(Type.String({ description: 'Why no 2xx: a status, a timeout, a refused address, ...' }))),
  ms: field('ms', Type.Integer()),
  response: field('response', Type.String({ description: 'The first 1 KB of the answer' })),
};
