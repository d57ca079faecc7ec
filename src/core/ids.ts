import { AppError } from './app.error.js';
import { INT8_MAX, MAX_BATCH_IDS } from './limits.js';

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

/** A department or user id as the API carries it (docs/api-rules.md#ids): a number up to 2^53-1, a decimal string above. */
export type Id = number | string;

/**
 * The one form of an id sent as a number or as a string: a number up to
 * 2^53-1, a decimal string above (so equal ids compare equal). `field` names
 * it in the 400 for a string beyond int8, which no row can have.
 */
export function canonicalId(value: Id, field: string): Id {
  if (typeof value === 'number') return value;
  const big = BigInt(value);
  if (big > INT8_MAX) throw new AppError(400, `${field} ${value} is beyond the 64-bit range of ids`);
  return oneForm(big);
}

/** A decimal id within int8 (checked by the caller) in its one form. */
export const idFromText = (text: string): Id => oneForm(BigInt(text));

/** The rule of the one form: a number up to 2^53-1, a decimal string above. */
const oneForm = (id: bigint): Id => (id > SAFE_MAX ? id.toString() : Number(id));

/** Ids in numeric order (a string form is above every number form). */
export const idOrder = (a: Id, b: Id): number => {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const [x, y] = [BigInt(a), BigInt(b)];
  return x < y ? -1 : x > y ? 1 : 0;
};

/** `input` with each id field named in its one form (canonicalId); absent and null ones as they are. */
export function withCanonicalIds<T extends object>(input: T, fields: (keyof T & string)[]): T {
  const out = { ...input } as Record<string, unknown>;
  for (const field of fields) {
    const value = out[field];
    if (typeof value === 'string' || typeof value === 'number') out[field] = canonicalId(value, field);
  }
  return out as T;
}

/** A department or user id in the path: beyond int8 no row can have it (404, named as sent). */
export function parseId(raw: string, what: string): Id {
  const id = pathId(raw);
  if (id > INT8_MAX) throw new AppError(404, `${what}(s) not found: ${raw}`);
  return oneForm(id);
}

/** An id the service hands out itself (an API key's, a webhook endpoint's): its sequence stays below 2^53, so beyond it is a 404. */
export function parseOwnId(raw: string, what: string): number {
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
export function parseIds(raw: string, what: string): Id[] {
  const parts = raw.split(',');
  if (parts.length > MAX_BATCH_IDS) {
    throw new AppError(400, `The path may list at most ${MAX_BATCH_IDS} ids, got ${parts.length}`);
  }
  return [...new Set(parts.map((part) => parseId(part, what)))];
}
