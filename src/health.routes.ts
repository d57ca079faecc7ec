import { Type } from '@sinclair/typebox';
import { AppError } from './core/app.error.js';
import { responses } from './http/envelope.schema.js';
import { TIMED_OUT, within } from './core/timeout.js';
import { routesPlugin } from './http/routes.plugin.js';

const Health = Type.Object({ status: Type.String() }, { $id: 'Health' });

/** /readyz answers 503 this quickly when the database is silent, well before any statement deadline. */
const READY_WITHIN_MS = 2_000;

/** Liveness (the process answers) and readiness (the database answers). */
export const healthRoutes = routesPlugin(
  'health-routes',
  async (app) => {
    app.addSchema(Health);
    app.get(
      '/healthz',
      {
        config: { public: true },
        logLevel: 'warn',
        schema: {
          operationId: 'health',
          summary: 'Liveness: the process answers',
          tags: ['health'],
          security: [],
          response: responses(Type.Ref('Health'), []),
        },
      },
      async () => ({ status: 'ok' }),
    );
    app.get(
      '/readyz',
      {
        config: { public: true },
        // Probes arrive every few seconds: their lines would drown the log at info.
        logLevel: 'warn',
        schema: {
          operationId: 'ready',
          summary: 'Readiness: the database answers',
          tags: ['health'],
          security: [],
          response: responses(Type.Ref('Health'), [503]),
        },
      },
      async (request) => {
        const answer = await within(READY_WITHIN_MS, request.sql`SELECT 1`).catch(() => TIMED_OUT);
        if (answer === TIMED_OUT) throw new AppError(503, 'Database unavailable');
        return { status: 'ready' };
      },
    );
  },
  ['@fastify/swagger', 'metrics'],
);
