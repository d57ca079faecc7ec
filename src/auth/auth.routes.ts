import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Sql } from '../db/database.js';
import { AUTHED, responses, WITH_BODY } from '../http/envelope.schema.js';
import { PERMISSIONS } from './auth.roles.js';
import { LoginBody, LoginResult, Me } from './auth.schema.js';
import { login, logout, me } from './auth.service.js';
import { requestActor } from '../audit/audit.record.js';

export const authRoutes: FastifyPluginAsyncTypebox<{ sql: Sql; tokenTtl: number }> = async (app, { sql, tokenTtl }) => {
  app.post(
    '/auth/login',
    {
      config: { public: true },
      schema: { tags: ['auth'], body: LoginBody, response: responses(LoginResult, [...WITH_BODY, 401, 403, 429]) },
    },
    async (request) => {
      const { account, sessionId } = await login(sql, request.body, tokenTtl, { requestId: request.id, ip: request.ip });
      const access_token = app.jwt.sign({ tid: account.tenantId, sid: sessionId, sub: String(account.userId) });
      return { access_token, token_type: 'Bearer' as const, expires_in: tokenTtl };
    },
  );

  app.post(
    '/auth/logout',
    { schema: { tags: ['auth'], response: responses(Type.Null(), AUTHED) } },
    async (request) => {
      await sql.begin((tx) => logout(tx, requestActor(request)));
      return null;
    },
  );

  app.get('/auth/me', { schema: { tags: ['auth'], response: responses(Me, AUTHED) } }, async (request) => {
    const { tenantId, userId } = request.caller;
    const row = await me(sql, tenantId, userId);
    return {
      user: { userId: row.userId, userName: row.userName, nickName: row.nickName, deptId: row.deptId },
      tenant: { id: row.id, tenantId, tenantName: row.tenantName, companyName: row.companyName },
      roles: [request.caller.role],
      permissions: [...PERMISSIONS[request.caller.role]],
    };
  });
};
