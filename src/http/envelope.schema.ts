import { Type, type TSchema } from '@sinclair/typebox';
import type { AppError } from '../core/app.error.js';

// Routes declare the schema of `data` for 200; the onSend hook wraps it in
// {code, msg, data}. Error statuses are declared with the full envelope
// because the error handler sends it already wrapped.

export const ErrorEnvelope = Type.Object(
  {
    code: Type.Integer({ description: 'Equals the HTTP status' }),
    msg: Type.String({ description: 'What went wrong, in words a client developer can act on' }),
    data: Type.Null(),
  },
  { $id: 'ErrorEnvelope', description: 'Every failure: the HTTP status equals code, data is null' },
);

/**
 * The success envelope as the OpenAPI document shows it: each operation's
 * 200 adds its own `data` (src/http/openapi.ts). Only the document uses it;
 * on the wire the envelope plugin writes it around the serialised data.
 */
export const SuccessEnvelope = Type.Object(
  {
    code: Type.Literal(200),
    msg: Type.Literal('success'),
  },
  { $id: 'SuccessEnvelope', description: 'Every success: HTTP 200, code 200, msg "success"; data holds the result' },
);

/** The marker a 200 schema carries when the operation answers with a Location header (see Created). */
export const LOCATION = 'x-location';

/** The 200 of a create: data null (docs/api-rules.md#requests-and-answers), the new resource's path in the Location header. */
export const Created = Type.Null({ [LOCATION]: "The new resource's path, e.g. /system/dept-api/101" });

export type ErrorStatus = AppError['status'] | 500;

/**
 * The `response` map of a route: its 200 data schema plus every failure it
 * can answer. Any route can fail unexpectedly (500) or meet an unavailable
 * database, a request deadline or a shutdown (503).
 */
export function responses(data: TSchema, errors: ErrorStatus[]) {
  const map: Record<number, TSchema> = { 200: data };
  for (const status of [...new Set<ErrorStatus>([...errors, 500, 503])]) {
    map[status] = Type.Ref('ErrorEnvelope');
  }
  return map;
}

/** Failures every authenticated route can answer besides its own. */
export const AUTHED: ErrorStatus[] = [401, 403];
export const WITH_BODY: ErrorStatus[] = [400, 413, 415];
