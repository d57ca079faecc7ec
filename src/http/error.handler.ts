import type { FastifyError, FastifyInstance, FastifySchemaValidationError } from 'fastify';
import { AppError } from '../core/app.error.js';
import { BODY_LIMIT_TEXT } from '../core/limits.js';
import { discardRestOfBody } from './body.discard.js';
import { CommitOutcomeUnknown, isUnavailable } from '../db/retry.js';
import { constraintOf, isPgError } from '../db/pg.errors.js';

/**
 * PostgreSQL constraint names (sql/*.sql) and what they mean to a client.
 * The functions check these rules first with clearer messages; the
 * constraints are the backstop for races and anything a check missed.
 */
const CONSTRAINTS: Record<string, [AppError['status'], string]> = {
  sys_dept_sibling_name_key: [409, 'A live department with this deptName already exists under the same parent'],
  sys_dept_not_own_parent_check: [409, 'A department cannot be its own parent'],
  sys_dept_order_num_check: [400, 'orderNum must be >= 0'],
  sys_dept_tenant_fkey: [400, 'Unknown tenant'],
  sys_user_name_live_key: [409, 'A live user with this userName already exists in the tenant'],
  sys_user_dept_fkey: [400, 'deptId is not a department of your tenant'],
  sys_tenant_company_name_live_key: [409, 'A live tenant with this companyName already exists'],
  sys_tenant_code_key: [409, 'Tenant code already taken; retry'],
  sys_tenant_period_check: [400, 'startTime must not be after endTime'],
  sys_tenant_account_count_check: [400, 'accountCount must be >= -1'],
  sys_package_name_live_key: [409, 'Package name already taken by a live package'],
  sys_tenant_quota_check: [400, 'quotaBo fields must be >= 0, the six allowances >= -1 (unlimited)'],
  // Two first requests with one key, the second's snapshot older than the first's commit, twice over (src/quotas/quota.idempotency.ts).
  quota_idempotency_pkey: [409, 'Another request with this Idempotency-Key has just answered; repeat this one to read its answer'],
};

/** SQLSTATEs that mean "the input was wrong" when no constraint name is known. */
const SQLSTATE: Record<string, [AppError['status'], string]> = {
  '23505': [409, 'Conflicts with an existing record'],
  '23503': [400, 'Refers to a record that does not exist'],
  '23514': [400, 'A value is out of range'],
  '22001': [400, 'A value is too long'],
  '22003': [400, 'A number is out of range'],
  '22007': [400, 'Invalid date'],
  '22008': [400, 'Invalid date'],
  '22P02': [400, 'Invalid value'],
  // PostgreSQL text cannot hold U+0000; JSON and query strings can carry it.
  '22021': [400, 'Text values must not contain the NUL character (\\u0000)'],
  '22P05': [400, 'Text values must not contain the NUL character (\\u0000)'],
  // Only the tenant-code sequence has a maximum (999999).
  '2200H': [409, 'No more six-digit tenant codes are available'],
};

/**
 * Ajv's errors as one sentence per field: "body.status must be one of "0",
 * "1"". Alternatives (anyOf, const, enum, nullable) are folded into the
 * field's line instead of repeated, and the field is always named.
 */
function describeValidation(errors: FastifySchemaValidationError[], context: string): string {
  const fields = new Map<string, { messages: Set<string>; allowed: unknown[]; nullable: boolean }>();
  for (const e of errors) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') continue; // its branches say more
    const path = `${context}${e.instancePath.replaceAll('/', '.')}`;
    const field = fields.get(path) ?? { messages: new Set<string>(), allowed: [], nullable: false };
    const params = e.params as { allowedValue?: unknown; allowedValues?: unknown[]; type?: string };
    if (e.keyword === 'const') field.allowed.push(params.allowedValue);
    else if (e.keyword === 'enum') field.allowed.push(...(params.allowedValues ?? []));
    else if (e.keyword === 'type' && params.type === 'null') field.nullable = true;
    else field.messages.add(e.message ?? 'is invalid');
    fields.set(path, field);
  }
  return [...fields]
    .map(([path, { messages, allowed, nullable }]) => {
      const parts = [...messages];
      if (allowed.length > 0) parts.push(`must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`);
      if (parts.length === 0) parts.push('must be null');
      return `${path} ${parts.join(' or ')}${nullable && parts[0] !== 'must be null' ? ', or null' : ''}`;
    })
    .join('; ');
}

/** The status and message of any failure, as the one error handler answers it (SCIM words the same outcome its own way). */
export function classify(error: FastifyError | Error): [number, string] {
  if (error instanceof AppError) return [error.status, error.message];
  if (error instanceof CommitOutcomeUnknown) return [503, `${error.message}: read it back before repeating it`];
  if (isUnavailable(error)) return [503, 'The database is unavailable; retry later'];
  if (isPgError(error)) {
    const constraint = constraintOf(error);
    const known = (constraint && CONSTRAINTS[constraint]) || SQLSTATE[error.code];
    if (known) return known;
    return [500, 'Internal server error'];
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    return [400, `Invalid input: ${describeValidation(fastifyError.validation, fastifyError.validationContext ?? 'request')}`];
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return [413, `Request body is larger than ${BODY_LIMIT_TEXT}`];
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return [415, 'Content-Type must be application/json'];
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return [400, 'Request body is not valid JSON'];
  }
  const status = fastifyError.statusCode;
  if (status !== undefined && status >= 400 && status < 500) return [status, error.message];
  return [500, 'Internal server error'];
}

/**
 * The one error handler: every failure becomes `{code, msg, data: null}`
 * with the HTTP status equal to `code`. A 500 says nothing about its cause;
 * the log has it, tied to the X-Request-Id the client received.
 */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    const [status, msg] = classify(error);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    // `reason`, not `msg`: pino's own msg key would be written twice and jq would keep only one.
    else request.log.info({ status, reason: msg }, 'request refused');
    if (status === 413) {
      // The body is still arriving: take the rest in (bounded) so the client can read this answer, then close.
      await discardRestOfBody(request.raw);
      reply.header('connection', 'close');
    }
    return reply.code(status).send({ code: status, msg: status >= 500 ? `${msg} (request id ${request.id})` : msg, data: null });
  });
}
