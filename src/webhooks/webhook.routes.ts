import { Type } from '@sinclair/typebox';
import { transaction } from '../db/retry.js';
import { assert } from '../core/app.error.js';
import { IdParam, RefTo } from '../core/common.schema.js';
import { parseOwnId } from '../core/ids.js';
import { AUTHED, responses, WITH_BODY } from '../http/envelope.schema.js';
import { routesPlugin } from '../http/routes.plugin.js';
import { requestActor } from '../identity/caller.js';
import type { WebhookWorker } from './webhook.delivery.js';
import type { AddressRule } from '../outbound/outbound.address.js';
import type { AuditFeed } from '../audit/audit.feed.js';
import { newSecret } from './webhook.sign.js';
import {
  WebhookCreate,
  WebhookCreated,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookEndpoint,
  WebhookPage,
  WebhookPageQuery,
  WebhookReplay,
  WebhookSecret,
  WebhookTestResult,
  WebhookUpdate,
} from './webhook.schema.js';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  replayFrom,
  rotateSecret,
  updateEndpoint,
} from './webhook.sql.js';

const tags = ['webhooks'];

/** /system/webhook-api: the caller's tenant's webhook endpoints (docs/webhooks.md). Admins only. */
export const webhookRoutes = routesPlugin<{ worker: WebhookWorker; rule: AddressRule; feed: AuditFeed }>(
  'webhook-routes',
  async (app, { worker, rule, feed }) => {
    for (const schema of [WebhookEndpoint, WebhookCreate, WebhookUpdate, WebhookCreated, WebhookDelivery]) app.addSchema(schema);
    const endpointId = (raw: string) => parseOwnId(raw, 'Webhook endpoint');

    app.post(
      '/',
      {
        config: { permission: 'system:webhook:add' },
        schema: {
          operationId: 'createWebhook',
          summary: 'Create a webhook endpoint for your tenant',
          description: 'The answer carries the signing secret, this once. Delivery starts with the next change.',
          tags,
          body: RefTo(WebhookCreate),
          response: responses(Type.Ref('WebhookCreated'), [...WITH_BODY, ...AUTHED]),
        },
      },
      async (request) => {
        const secret = newSecret();
        // Records committed before this request get their positions first, so "from now on" starts after them.
        await feed.sequence();
        const endpoint = await transaction(request.sql, (tx) => createEndpoint(tx, requestActor(request), request.body, rule, secret));
        return { ...endpoint, secret };
      },
    );

    app.put(
      '/',
      {
        config: { permission: 'system:webhook:edit' },
        schema: {
          operationId: 'updateWebhook',
          summary: 'Replace a webhook endpoint',
          description: 'Full replacement. status "1" stops delivery (the cursor stays); "0" resumes it from the cursor.',
          tags,
          body: RefTo(WebhookUpdate),
          response: responses(Type.Null(), [...WITH_BODY, ...AUTHED, 404]),
        },
      },
      async (request) => {
        await transaction(request.sql, (tx) => updateEndpoint(tx, requestActor(request), request.body, rule));
        worker.wake();
        return null;
      },
    );

    app.get(
      '/list',
      {
        config: { permission: 'system:webhook:list' },
        schema: {
          operationId: 'listWebhooks',
          summary: "Your tenant's webhook endpoints, one page",
          tags,
          querystring: WebhookPageQuery,
          response: responses(WebhookPage, [400, ...AUTHED]),
        },
      },
      async (request) => listEndpoints(request.sql, request.caller.tenantId, request.query),
    );

    app.get(
      '/:id',
      {
        config: { permission: 'system:webhook:query' },
        schema: {
          operationId: 'getWebhook',
          summary: 'Get a webhook endpoint',
          tags,
          params: IdParam,
          response: responses(Type.Ref('WebhookEndpoint'), [400, ...AUTHED, 404]),
        },
      },
      async (request) => {
        const id = endpointId(request.params.id);
        const endpoint = await getEndpoint(request.sql, request.caller.tenantId, id);
        assert(endpoint, 404, `Webhook endpoint ${id} not found`);
        return endpoint;
      },
    );

    app.delete(
      '/:id',
      {
        config: { permission: 'system:webhook:remove' },
        schema: {
          operationId: 'deleteWebhook',
          summary: 'Delete a webhook endpoint and its attempt log',
          tags,
          params: IdParam,
          response: responses(Type.Null(), [400, ...AUTHED, 404]),
        },
      },
      async (request) => {
        const id = endpointId(request.params.id);
        await transaction(request.sql, (tx) => deleteEndpoint(tx, requestActor(request), id));
        return null;
      },
    );

    app.post(
      '/:id/test',
      {
        // Waits for the receiver up to WEBHOOK_TIMEOUT, which may exceed the request deadline.
        config: { permission: 'system:webhook:edit', longLived: true },
        schema: {
          operationId: 'testWebhook',
          summary: 'Send one webhook.test event now and answer what the receiver said',
          description: 'Outside the queue: the cursor does not move. The attempt is logged with the others.',
          tags,
          params: IdParam,
          response: responses(WebhookTestResult, [400, ...AUTHED, 404]),
        },
      },
      async (request) => {
        const id = endpointId(request.params.id);
        const result = await worker.test(request.caller.tenantId, id);
        assert(result, 404, `Webhook endpoint ${id} not found`);
        return { status: result.statusCode, ms: result.ms, body: result.statusCode === null ? (result.error ?? '') : result.response };
      },
    );

    app.get(
      '/:id/deliveries',
      {
        config: { permission: 'system:webhook:query' },
        schema: {
          operationId: 'listWebhookDeliveries',
          summary: 'The attempt log of an endpoint, newest first (kept 7 days)',
          tags,
          params: IdParam,
          querystring: WebhookPageQuery,
          response: responses(WebhookDeliveryPage, [400, ...AUTHED, 404]),
        },
      },
      async (request) => listDeliveries(request.sql, request.caller.tenantId, endpointId(request.params.id), request.query),
    );

    app.post(
      '/:id/replay',
      {
        config: { permission: 'system:webhook:edit' },
        schema: {
          operationId: 'replayWebhook',
          summary: 'Move the cursor back: every later event is sent again',
          tags,
          params: IdParam,
          body: WebhookReplay,
          response: responses(Type.Null(), [...WITH_BODY, ...AUTHED, 404]),
        },
      },
      async (request) => {
        const id = endpointId(request.params.id);
        await transaction(request.sql, (tx) => replayFrom(tx, requestActor(request), id, request.body.after));
        worker.wake();
        return null;
      },
    );

    app.post(
      '/:id/rotate-secret',
      {
        config: { permission: 'system:webhook:edit' },
        schema: {
          operationId: 'rotateWebhookSecret',
          summary: 'A new signing secret, shown once; the old one keeps signing beside it for 24 h',
          tags,
          params: IdParam,
          response: responses(WebhookSecret, [400, ...AUTHED, 404]),
        },
      },
      async (request) => {
        const id = endpointId(request.params.id);
        return transaction(request.sql, (tx) => rotateSecret(tx, requestActor(request), id, newSecret()));
      },
    );
  },
);
