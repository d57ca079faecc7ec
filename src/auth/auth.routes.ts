import { Type } from '@sinclair/typebox';
import { RefTo } from '../core/common.schema.js';
import { AUTHED, responses, WITH_BODY } from '../http/envelope.schema.js';
import { PERMISSIONS } from '../identity/roles.js';
import { LoginBody, LoginResult, Me } from './auth.schema.js';
import { login, logout, me } from './auth.service.js';
import { requestActor, type Caller } from '../identity/caller.js';
import { assert } from '../core/app.error.js';
import { transaction } from '../db/retry.js';
import { routesPlugin } from '../http/routes.plugin.js';

/** The routes about a signed-in person's own session answer an API key 403: it has neither a user nor a session. */
function refuseApiKey(caller: Caller, why: string): void {
  assert(caller.apiKeyId === undefined, 403, `Not for API keys: ${why}`);
}

export const authRoutes = routesPlugin<{ tokenTtl: number }>('auth-routes', async (app, { tokenTtl }) => {
  for (const schema of [LoginBody, LoginResult, Me]) app.addSchema(schema);
  app.post(
    '/auth/login',
    {
      config: { public: true },
      schema: {
        operationId: 'login',
        summary: 'Log in: a Bearer token for the other operations',
        tags: ['auth'],
        security: [],
        body: RefTo(LoginBody),
        response: responses(Type.Ref('LoginResult'), [...WITH_BODY, 401, 403, 429]),
      },
    },
    async (request) => {
      const { account, sessionId } = await login(request.sql, request.body, tokenTtl, { requestId: request.id, ip: request.ip });
      const access_token = app.jwt.sign({ tid: account.tenantId, sid: sessionId, sub: String(account.userId) });
      return { access_token, token_type: 'Bearer' as const, expires_in: tokenTtl };
    },
  );

  app.post(
    '/auth/logout',
    {
      config: { changesAccess: true },
      schema: { operationId: 'logout', summary: 'Log out: revoke this token', tags: ['auth'], response: responses(Type.Null(), AUTHED) },
    },
    async (request) => {
      refuseApiKey(request.caller, 'an API key has no session to end; revoke it with DELETE /system/apikey-api/{id}');
      await transaction(request.sql, (tx) => logout(tx, requestActor(request)));
      return null;
    },
  );

  const summary = 'The current user, tenant, roles and permissions';
  app.get('/auth/me', { schema: { operationId: 'me', summary, tags: ['auth'], response: responses(Type.Ref('Me'), AUTHED) } }, async (request) => {
    refuseApiKey(request.caller, 'an API key is not a user; GET /system/apikey-api/{id} describes a key');
    const { tenantId, userId } = request.caller;
    const row = await me(request.sql, tenantId, userId);
    return {
      user: { userId: row.userId, userName: row.userName, nickName: row.nickName, deptId: row.deptId },
      tenant: { id: row.id, tenantId, tenantName: row.tenantName, companyName: row.companyName },
      roles: [request.caller.role],
      permissions: [...PERMISSIONS[request.caller.role]],
    };
  });
});
