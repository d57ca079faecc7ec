import { AppError } from './app.error.js';

const INT8_MAX = 9_223_372_036_854_775_807n;

/**
 * Parses a path id of a department or user: a positive decimal integer that
 * fits PostgreSQL's int8 (DECISIONS §8; anything else is a 400). Such ids
 * come from sequences starting at 100, so one beyond 2^53 cannot exist: it
 * is answered "not found" at once rather than rounded to a JS number that
 * would name, or find, a different row.
 */
export function parseId(raw: string, what: string): number {
  if (!/^[0-9]{1,19}$/.test(raw) || BigInt(raw) === 0n || BigInt(raw) > INT8_MAX) {
    throw new AppError(400, `The path id must be a positive 64-bit integer (at most 19 digits), got "${raw}"`);
  }
  if (BigInt(raw) > BigInt(Number.MAX_SAFE_INTEGER)) throw new AppError(404, `${what}(s) not found: ${raw}`);
  return Number(raw);
}

export const MAX_BATCH = 1000;

/** Parses `1,2,3`: each a valid id, at most 1000 of them, duplicates dropped in order. */
export function parseIds(raw: string, what: string): number[] {
  const parts = raw.split(',');
  if (parts.length > MAX_BATCH) {
    throw new AppError(400, `The path may list at most ${MAX_BATCH} ids, got ${parts.length}`);
  }
  return [...new Set(parts.map((part) => parseId(part, what)))];
}
