import Ajv, { type AnySchema, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';

// Fastify validates every part with one Ajv that coerces types. That suits
// the query string and path (always text on the wire) but not JSON bodies:
// there it turns 5 into "5" and, inside a string-or-null union, null into "",
// so a client that PUTs back what it read would silently blank its nulls.
// Bodies are therefore validated without coercion; the rest as before.
//
// Installed as the server's validator *builder* (schemaController option),
// not with setValidatorCompiler: Fastify rebuilds the compiler of every
// plugin context that adds shared schemas, from the builder, so only the
// builder reaches all routes.

const common: Options = { useDefaults: true, removeAdditional: true, allErrors: false, strict: false };

function ajv(coerceTypes: Options['coerceTypes'], shared: AnySchema[]) {
  const instance = addFormats.default(new Ajv.default({ ...common, coerceTypes }));
  for (const schema of shared) instance.addSchema(schema);
  return instance;
}

function validatorFor(externalSchemas: unknown): FastifySchemaCompiler<AnySchema> {
  const shared = Object.values((externalSchemas ?? {}) as Record<string, AnySchema>);
  const strict = ajv(false, shared);
  const coercing = ajv('array', shared);
  return ({ schema, httpPart }) => {
    const instance = httpPart === 'body' ? strict : coercing;
    const id = (schema as { $id?: string }).$id;
    return (id && instance.getSchema(id)) || instance.compile(schema);
  };
}

type ValidatorBuilder = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator'];

/**
 * The builder Fastify calls per plugin context. Its declared type (from
 * @fastify/ajv-compiler) describes the compiled function loosely; at run time
 * Fastify calls it with {schema, httpPart, ...}, which is what validatorFor takes.
 */
export const buildValidator = validatorFor as unknown as ValidatorBuilder;
