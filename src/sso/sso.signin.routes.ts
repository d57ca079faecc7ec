import { Type } from '@sinclair/typebox';
import { RefTo } from '../core/common.schema.js';
import { responses, WITH_BODY } from '../http/envelope.schema.js';
import { publicBase } from '../http/public.url.js';
import { routesPlugin } from '../http/routes.plugin.js';
import { LoginResult } from '../auth/auth.schema.js';
import type { ProviderClients } from './sso.client.js';
import { redirectUriOf } from './sso.rules.js';
import { discoverConnections } from './sso.sql.js';
import { AuthorizeQuery, CallbackQuery, SsoDiscovery, SsoDiscoveryQuery, SsoIdParam, SsoTokenBody } from './sso.schema.js';
import { finishSignIn, redeemCode, startSignIn } from './sso.signin.js';

const tags = ['sso'];
const REDIRECT = (description: string) => Type.Null({ description });

/**
 * The sign-in a back-office SPA drives (docs/sso.md#the-flow), without a
 * token: the login page's discovery, the authorize and callback legs the
 * browser follows, and the code's redemption. No token ever travels in a URL:
 * the browser carries a one-time code, which only the SPA holding the PKCE
 * verifier can redeem.
 */
export const ssoSignInRoutes = routesPlugin<{ clients: ProviderClients; publicUrl?: string; tokenTtl: number }>(
  'sso-signin-routes',
  async (app, { clients, publicUrl, tokenTtl }) => {
    for (const schema of [SsoDiscovery, SsoTokenBody, LoginResult]) app.addSchema(schema);
    const redirectUri = (request: { protocol: string; host: string }, id: string) => redirectUriOf(publicBase(request, publicUrl), id);

    app.get(
      '/connections',
      {
        config: { public: true },
        schema: {
          operationId: 'discoverSsoConnections',
          summary: "A login page's view: whether the tenant requires SSO, and its enabled connections",
          description: 'An unknown or suspended tenant answers the same shape, empty.',
          tags,
          security: [],
          querystring: SsoDiscoveryQuery,
          response: responses(Type.Ref('SsoDiscovery'), [400]),
        },
      },
      async (request) => discoverConnections(request.sql, request.query.tenantId),
    );

    app.get(
      '/:id/authorize',
      {
        config: { public: true },
        schema: {
          operationId: 'authorizeSso',
          summary: 'Start a sign-in: the browser is sent to the identity provider',
          description:
            "The SPA makes a PKCE pair and a state and navigates here. return_to must be exactly one of the connection's returnUrls; every refusal is a 400 envelope, never a redirect.",
          tags,
          security: [],
          params: SsoIdParam,
          querystring: AuthorizeQuery,
          response: { 302: REDIRECT("To the identity provider's authorization endpoint (Location)"), ...responses(Type.Null(), [400, 404]) },
        },
      },
      async (request, reply) => {
        const { return_to, state, code_challenge } = request.query;
        const url = await startSignIn(
          request.sql,
          clients,
          request.params.id,
          { returnTo: return_to, state, codeChallenge: code_challenge },
          redirectUri(request, request.params.id),
          (message) => request.log.warn(message),
        );
        return reply.redirect(url, 302);
      },
    );

    app.get(
      '/:id/callback',
      {
        config: { public: true },
        schema: {
          operationId: 'ssoCallback',
          summary: "The provider's redirect URI: the browser goes on to the SPA's return_to with a one-time code or a refusal",
          description:
            "Answers 303 to return_to?code=<one-time code>&state=<the SPA's state>, or return_to?error=<reason>&state=<state> with reason one of access_denied, not_provisioned, user_disabled, tenant_suspended, invalid_response. An unknown, expired or replayed state is a 400 envelope.",
          tags,
          security: [],
          params: SsoIdParam,
          querystring: CallbackQuery,
          response: { 303: REDIRECT("To the SPA's return_to (Location)"), ...responses(Type.Null(), [400, 404]) },
        },
      },
      async (request, reply) => {
        const handback = await finishSignIn(
          request.sql,
          clients,
          request.params.id,
          request.query,
          { requestId: request.id, ip: request.ip },
          (message) => request.log.info(message),
        );
        const target = new URL(handback.returnTo);
        for (const [name, value] of Object.entries(handback.params)) target.searchParams.set(name, value);
        target.searchParams.set('state', handback.state);
        return reply.redirect(target.href, 303);
      },
    );

    app.post(
      '/token',
      {
        config: { public: true },
        schema: {
          operationId: 'ssoToken',
          summary: 'Redeem the one-time code: what POST /auth/login answers',
          description: 'The code is single-use, valid 60 s, and only for the PKCE verifier of the challenge the sign-in began with.',
          tags,
          security: [],
          body: RefTo(SsoTokenBody),
          response: responses(Type.Ref('LoginResult'), [...WITH_BODY, 403]),
        },
      },
      async (request) => {
        const { tenantId, userId, sessionId } = await redeemCode(request.sql, request.body.code, request.body.code_verifier, tokenTtl, {
          requestId: request.id,
          ip: request.ip,
        });
        const access_token = app.jwt.sign({ tid: tenantId, sid: sessionId, sub: String(userId) });
        return { access_token, token_type: 'Bearer' as const, expires_in: tokenTtl };
      },
    );
  },
  ['@fastify/swagger', 'metrics', 'auth'],
);
