import Ajv, { type AnySchema, type Options, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
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

// Fastify asks the builder once per plugin context (80-odd here) and compiles
// each route's schemas apart, though most contexts share the same schemas and
// many routes the same query or path schema. Building two Ajv instances per
// context and compiling equal schemas again was most of a start's CPU (the
// embedded mode's start to ready, docs/benchmark.md#the-testcontainers-module),
// so the instances are shared by contexts with equal shared schemas, and a
// compiled validator by equal schemas of the same kind. A validator is a pure
// function whose `errors` Fastify reads right after the call, so sharing one is safe.
const byShared = new Map<string, FastifySchemaCompiler<AnySchema>>();

function validatorFor(externalSchemas: unknown): FastifySchemaCompiler<AnySchema> {
  const shared = Object.values((externalSchemas ?? {}) as Record<string, AnySchema>);
  const sharedKey = JSON.stringify(shared);
  const known = byShared.get(sharedKey);
  if (known) return known;
  const strict = ajv(false, shared);
  const coercing = ajv('array', shared);
  const compiled = new Map<string, ReturnType<FastifySchemaCompiler<AnySchema>>>();
  const compiler: FastifySchemaCompiler<AnySchema> = ({ schema, httpPart }) => {
    const body = httpPart === 'body';
    const key = `${body ? 'body' : 'other'} ${JSON.stringify(schema)}`;
    let validate = compiled.get(key);
    if (!validate) {
      const instance = body ? strict : coercing;
      const id = (schema as { $id?: string }).$id;
      validate = lazily(() => (id && instance.getSchema(id)) || instance.compile(schema));
      compiled.set(key, validate);
    }
    return validate;
  };
  byShared.set(sharedKey, compiler);
  return compiler;
}

/**
 * Compiled at its first call, not when the route is added: compiling every
 * route's schemas was most of a start's CPU (of about 3 s to ready on the
 * embedded database, some 0.8 s went to Ajv and fast-json-stringify), and
 * most routes are not called in a process's first seconds. Fastify reads
 * `errors` right after a call, so the wrapper carries the compiled one's.
 */
function lazily(compile: () => ValidateFunction): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    compiled ??= compile();
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  }) as ValidateFunction;
  return validate;
}

type ValidatorBuilder = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator'];

/**
 * The builder Fastify calls per plugin context. Its declared type (from
 * @fastify/ajv-compiler) describes the compiled function loosely; at run time
 * Fastify calls it with {schema, httpPart, ...}, which is what validatorFor takes.
 */
export const buildValidator = validatorFor as unknown as ValidatorBuilder;

type SerializerBuilder = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer'];
const defaultSerializers = SerializerSelector();

/** Fastify's own response serializers (fast-json-stringify), each compiled at its first answer, as validators are (lazily). */
export const buildSerializer = ((externalSchemas: unknown, options: unknown) => {
  const compilerFor = (defaultSerializers as (e: unknown, o: unknown) => (route: unknown) => (data: unknown) => string)(externalSchemas, options);
  return (route: unknown) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => (serialize ??= compilerFor(route))(data);
  };
}) as unknown as SerializerBuilder;
