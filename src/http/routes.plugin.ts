import fp from 'fastify-plugin';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

/**
 * What a resource's routes need registered before them: the OpenAPI document
 * collects them as they are added, the metrics' onResponse hook times them,
 * and auth admits their callers and checks each route's permission.
 */
const ROUTES_NEED = ['@fastify/swagger', 'metrics', 'auth'];

/**
 * A resource's routes as a named plugin: encapsulated like a plain plugin (its
 * schemas, hooks and error handler stay its own), with the dependencies
 * Fastify checks when it is registered, so the wiring does not rest on the
 * order of lines in app.ts. Public routes (health) need no auth: pass `needs`.
 */
export function routesPlugin<Options extends object = Record<never, never>>(
  name: string,
  routes: FastifyPluginAsyncTypebox<Options>,
  needs: string[] = ROUTES_NEED,
) {
  return fp(routes, { name, dependencies: needs, encapsulate: true });
}
