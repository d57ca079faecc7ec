import { Type } from '@sinclair/typebox';
import { RefTo } from '../core/common.schema.js';
import { AUTHED, responses, WITH_BODY } from '../http/envelope.schema.js';
import { routesPlugin } from '../http/routes.plugin.js';
import { requestActor } from '../identity/caller.js';
import { requestHash } from './quota.idempotency.js';
import { ledgerOf } from './quota.ledger.sql.js';
import {
  ConsumeBody,
  Consumed,
  IdempotencyHeaders,
  LedgerPage,
  LedgerQuery,
  LedgerRow,
  QuotaUsage,
  RefundBody,
  Refunded,
  TenantPath,
  UsageQuery,
} from './quota.schema.js';
import { consume, usageOf } from './quota.usage.sql.js';
import { refund } from './quota.refund.sql.js';
import type { Answer } from './quota.keyed.js';

const tags = ['quota'];

/** A replayed answer says so (the IETF draft leaves the header to the server; this is the name Stripe's clients know). */
const REPLAYED = 'idempotent-replayed';

/**
 * /system/quota-api/{tenantId}: a tenant's counters, read by its users, the
 * admins of it or a tenant above it and the superadmin; consumed and
 * refunded by those admins and the superadmin (and their API keys), each
 * with an Idempotency-Key (docs/quotas.md).
 */
export const quotaRoutes = routesPlugin('quota-routes', async (app) => {
  for (const schema of [QuotaUsage, ConsumeBody, Consumed, RefundBody, Refunded, LedgerRow]) app.addSchema(schema);

  /** The answer's data, with the replay header when the key had answered before. */
  const answered = <T>(reply: { header(name: string, value: string): unknown }, answer: Answer<T>): T => {
    if (answer.replayed) reply.header(REPLAYED, 'true');
    return answer.data;
  };

  app.get(
    '/:tenantId',
    {
      config: { permission: 'system:quota:query' },
      schema: {
        operationId: 'getQuotaUsage',
        summary: "A tenant's counters: limit, used and remaining in its current service period (or the period named)",
        tags,
        params: TenantPath,
        querystring: UsageQuery,
        response: responses(Type.Ref('QuotaUsage'), [400, ...AUTHED, 404]),
      },
    },
    async (request) => usageOf(request.sql, request.caller, request.params.tenantId, request.query.periodStart),
  );

  app.post(
    '/:tenantId/consume',
    {
      config: { permission: 'system:quota:consume' },
      schema: {
        operationId: 'consumeQuota',
        summary: 'Consume an amount of a counter, never past its limit',
        description:
          'Idempotency-Key: the same key and body answer the first answer again (Idempotent-Replayed: true), another body 422, ' +
          'while the first is still running 409. Over the limit: 409 naming what is left, nothing consumed and the key not kept. ' +
          'A suspended tenant: 403.',
        tags,
        params: TenantPath,
        headers: IdempotencyHeaders,
        body: RefTo(ConsumeBody),
        response: responses(Type.Ref('Consumed'), [...WITH_BODY, ...AUTHED, 404, 409, 422]),
      },
    },
    async (request, reply) => {
      const { counter, amount, reference = null } = request.body;
      const tenantId = request.params.tenantId;
      const key = request.headers['idempotency-key'];
      const keyed = { tenantId, key, hash: requestHash('consume', { counter, amount, reference }) };
      return answered(reply, await consume(request.sql, requestActor(request), keyed, { counter, amount, reference }));
    },
  );

  app.post(
    '/:tenantId/refund',
    {
      config: { permission: 'system:quota:consume' },
      schema: {
        operationId: 'refundQuota',
        summary: 'Give back what a consumption took, all or part, to the period it was taken from',
        description: 'Idempotency-Key as for a consume. Beyond what the consumption still holds: 400; not a consumption of this tenant: 404.',
        tags,
        params: TenantPath,
        headers: IdempotencyHeaders,
        body: RefTo(RefundBody),
        response: responses(Type.Ref('Refunded'), [...WITH_BODY, ...AUTHED, 404, 409, 422]),
      },
    },
    async (request, reply) => {
      const { consumptionId, amount = null } = request.body;
      const tenantId = request.params.tenantId;
      const key = request.headers['idempotency-key'];
      const keyed = { tenantId, key, hash: requestHash('refund', { consumptionId, amount }) };
      return answered(reply, await refund(request.sql, requestActor(request), keyed, { consumptionId, amount }));
    },
  );

  app.get(
    '/:tenantId/ledger',
    {
      config: { permission: 'system:quota:query' },
      schema: {
        operationId: 'listQuotaLedger',
        summary: "A tenant's consumptions, newest first, with what was refunded of each",
        tags,
        params: TenantPath,
        querystring: LedgerQuery,
        response: responses(LedgerPage, [400, ...AUTHED, 404]),
      },
    },
    async (request) => ledgerOf(request.sql, request.caller, request.params.tenantId, request.query),
  );
});
