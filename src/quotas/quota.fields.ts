import { Type } from '@sinclair/typebox';
import { Nullable } from '../core/common.schema.js';
import { AUDIT_FIELDS, field } from '../db/fields.js';
import { COUNTERS } from './quota.counters.js';

// The ledger row's fields, once: API name, column of quota_consumption,
// schema. quota.schema.ts builds LedgerRow from this list and
// quota.ledger.sql.ts its SELECT list and row mapping. (The consume writes
// the row in its own statement, quota.usage.sql.ts.)

/** One of the counters a service consumes (quota.counters.ts). */
export const Counter = Type.Union(
  COUNTERS.map((c) => Type.Literal(c)),
  { description: 'One of the allowances of quotaBo' },
);

export const CONSUMPTION_FIELDS = {
  consumptionId: field('consumption_id', Type.String(), { asText: true }),
  counter: field('counter', Counter),
  amount: field('amount', Type.Integer()),
  refunded: field('refunded', Type.Integer()),
  reference: field('reference', Nullable(Type.String())),
  createBy: AUDIT_FIELDS.createBy,
  createTime: AUDIT_FIELDS.createTime,
};
