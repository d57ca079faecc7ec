import { AppError } from './app.error.js';

const INT8_MAX = 9_223_372_036_854_775_807n;

/**
 * Parses a path id: a positive decimal integer that fits PostgreSQL's int8.
 * Ids beyond 2^53 cannot belong to a department or user (their sequences
 * start at 100), so they are valid input that simply finds nothing.
 */
export function parseId(raw: string, name = 'id'): number {
  if (!/^[0-9]{1,19}$/.test(raw) || BigInt(raw) === 0n || BigInt(raw) > INT8_MAX) {
    throw new AppError(400, `${name} must be a positive integer of at most 19 digits, got "${raw}"`);
  }
  return Number(raw);
}

export const MAX_BATCH = 1000;

/** Parses `1,2,3`: each a valid id, at most 1000 of them, duplicates dropped in order. */
export function parseIds(raw: string): number[] {
  const parts = raw.split(',');
  if (parts.length > MAX_BATCH) {
    throw new AppError(400, `ids may list at most ${MAX_BATCH} ids, got ${parts.length}`);
  }
  return [...new Set(parts.map((part) => parseId(part, 'ids')))];
}
