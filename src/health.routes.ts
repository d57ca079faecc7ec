import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Sql } from './db/database.js';
import { AppError } from './http/app.error.js';
import { responses } from './http/envelope.schema.js';

const Health = Type.Object({ status: Type.String() });

/** Liveness (the process answers) and readiness (the database answers). */
export const healthRoutes: FastifyPluginAsyncTypebox<{ sql: Sql }> = async (app, { sql }) => {
  app.get('/healthz', { config: { public: true }, schema: { tags: ['health'], security: [], response: responses(Health, []) } }, async () => ({
    status: 'ok',
  }));
  app.get(
    '/readyz',
    { config: { public: true }, schema: { tags: ['health'], security: [], response: responses(Health, [503]) } },
    async () => {
      try {
        await sql`SELECT 1`;
      } catch {
        throw new AppError(503, 'Database unavailable');
      }
      return { status: 'ready' };
    },
  );
};
