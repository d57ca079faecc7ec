import { Type, type Static } from '@sinclair/typebox';
import { Day, PageOf, PageParams, TenantCode } from '../core/common.schema.js';
import { propertiesOf } from '../db/fields.js';
import { CONSUMPTION_FIELDS, Counter } from './quota.fields.js';

// Quota usage (docs/quotas.md): a tenant's counters for its current period,
// a consume and a refund with their answers, and the ledger.

/** The tenant whose quota it is. */
export const TenantPath = Type.Object({ tenantId: TenantCode() });

/** `periodStart`: a period by its first day (YYYY-MM-DD); default, or in the ledger all periods. */
export const UsageQuery = Type.Object({ periodStart: Type.Optional(Day) });

export const QuotaUsage = Type.Object(
  {
    tenantId: Type.String(),
    periodStart: Type.String({ description: "The first day of the tenant's current service period (YYYY-MM-DD)" }),
    counters: Type.Array(
      Type.Object({
        counter: Counter,
        limit: Type.Integer({ description: '-1: unlimited' }),
        used: Type.Integer(),
        remaining: Type.Union([Type.Integer(), Type.Null()], { description: 'null when unlimited; 0 when a lowered limit is below what is used' }),
      }),
    ),
  },
  { $id: 'QuotaUsage' },
);

export const ConsumeBody = Type.Object(
  {
    counter: Counter,
    amount: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    reference: Type.Optional(Type.String({ maxLength: 200, description: "The caller's own reference (an order, a report), kept in the ledger" })),
  },
  { $id: 'ConsumeBody', additionalProperties: false, examples: [{ counter: 'riskReport', amount: 1, reference: 'report 2026-11-0042' }] },
);

export const Consumed = Type.Object(
  {
    consumptionId: Type.String({ description: 'Name it to refund' }),
    counter: Counter,
    amount: Type.Integer(),
    limit: Type.Integer({ description: '-1: unlimited' }),
    used: Type.Integer(),
    remaining: Type.Union([Type.Integer(), Type.Null()], { description: 'null when unlimited' }),
  },
  { $id: 'Consumed' },
);

export const RefundBody = Type.Object(
  {
    consumptionId: Type.String({ pattern: '^[1-9][0-9]{0,17}$', description: 'As the consume answered it' }),
    amount: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Default: all that the consumption still holds' })),
  },
  { $id: 'RefundBody', additionalProperties: false },
);

export const Refunded = Type.Object(
  {
    consumptionId: Type.String(),
    counter: Counter,
    amount: Type.Integer({ description: 'Given back by this refund' }),
    refunded: Type.Integer({ description: 'Given back by every refund of the consumption so far' }),
    used: Type.Integer({ description: "What the consumption's period has used after the refund" }),
  },
  { $id: 'Refunded' },
);

export const LedgerRow = Type.Object(propertiesOf(CONSUMPTION_FIELDS), { $id: 'LedgerRow' });
export const LedgerPage = PageOf(Type.Ref('LedgerRow'));
export const LedgerQuery = Type.Object({
  counter: Type.Optional(Counter),
  periodStart: Type.Optional(Day),
  ...PageParams,
});

/** Idempotency-Key (the IETF draft leaves its form to the server): 1-255 visible ASCII characters, a new one for each operation. */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.String({
    pattern: '^[\\x21-\\x7e]{1,255}$',
    description: 'A new key for each operation, the same for its retries: 1-255 visible ASCII characters (a UUID will do)',
  }),
});

export type ConsumeBody = Static<typeof ConsumeBody>;
export type RefundBody = Static<typeof RefundBody>;
export type Consumed = Static<typeof Consumed>;
export type Refunded = Static<typeof Refunded>;
