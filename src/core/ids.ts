import { AppError } from './app.error.js';
import { MAX_BATCH_IDS } from './limits.js';

const INT8_MAX = 9_223_372_036_854_775_807n;
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * docs/api-rules.md#limits: a path id is a positive decimal integer of at most 19
 * digits; anything else is a 400. A well-formed id that no row can have is
 * simply not found (404), named as sent.
 */
function pathId(raw: string): bigint {
  if (!/^[0-9]{1,19}$/.test(raw) || BigInt(raw) === 0n) {
    throw new AppError(400, `The path id must be a positive decimal integer of at most 19 digits, got "${raw}"`);
  }
  return BigInt(raw);
}

/**
 * A department or user id. Their sequences start at 100, so an id beyond
 * 2^53 cannot exist: it is answered at once rather than rounded to a JS
 * number that would name, or find, a different row.
 */
export function parseId(raw: string, what: string): number {
  if (pathId(raw) > SAFE_MAX) throw new AppError(404, `${what}(s) not found: ${raw}`);
  return Number(raw);
}

/** A tenant's internal id: a 19-digit snowflake, kept as text; beyond int8 it cannot exist. */
export function parseInternalId(raw: string, what: string): string {
  if (pathId(raw) > INT8_MAX) throw new AppError(404, `${what} ${raw} not found`);
  return raw;
}

/**
 * A list cursor: the id of a row in a list ordered by a bigint id (the
 * schema takes up to 19 digits). Beyond int8 every id is before it, so it is
 * int8's largest value, after which no row can come.
 */
export function cursorId(raw: string): string {
  return BigInt(raw) > INT8_MAX ? INT8_MAX.toString() : raw;
}

/** Parses `1,2,3`: each a valid id, at most MAX_BATCH_IDS of them, duplicates dropped in order. */
export function parseIds(raw: string, what: string): number[] {
  const parts = raw.split(',');
  if (parts.length > MAX_BATCH_IDS) {
    throw new AppError(400, `The path may list at most ${MAX_BATCH_IDS} ids, got ${parts.length}`);
  }
  return [...new Set(parts.map((part) => parseId(part, what)))];
}
