/**
 * A refusal the client can act on: `status` becomes both the HTTP status and
 * the envelope `code`, `message` the envelope `msg`. Domain functions throw
 * these; the error handler turns them into envelopes.
 */
export class AppError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 422 | 429 | 503,
    message: string,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/** One-line guard: `assert(row, 404, 'Department 7 not found')`. */
export function assert(condition: unknown, status: AppError['status'], message: string): asserts condition {
  if (!condition) throw new AppError(status, message);
}
