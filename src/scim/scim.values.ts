import { INT8_MAX } from '../core/limits.js';
import { Phone } from '../core/common.schema.js';
import { ScimError } from './scim.error.js';

// How SCIM values are read, whatever the resource: JSON objects, attribute
// names in any case (RFC 7643 §2.1), optional strings, booleans as Entra ID
// sends them, our ids, and the address and phone forms the REST API takes.

/** A JSON object (not an array, not null). */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An object with its keys lower-cased: attribute names are case-insensitive (RFC 7643 §2.1). */
export function lowerKeys(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.toLowerCase(), v]));
}

/** A string, or null when absent; anything else is 400 invalidValue naming `what`. */
export function optionalString(value: unknown, what: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new ScimError(400, 'invalidValue', `${what} must be a string`);
  return value;
}

/**
 * `""` read as no value: Microsoft's SCIM validator clears an attribute
 * (the work email or phone, externalId) by sending it empty, where other
 * providers send null or a remove (docs/scim.md#users).
 */
export const emptyAsNull = (text: string | null): string | null => (text === '' ? null : text);

/**
 * A POST or PUT body's attributes, names lower-cased. Attributes nested under
 * the resource's core schema URN (`{"urn:...:core:2.0:User": {"userName": ...}}`,
 * the fully qualified form RFC 7644 §3.10 allows, as the scimverify suite
 * sends it) are read as top-level ones; an attribute given both ways takes
 * the nested value (docs/scim.md#users).
 */
export function bodyAttributes(sent: Record<string, unknown>, coreSchema: string): Record<string, unknown> {
  const { [coreSchema.toLowerCase()]: nested, ...body } = lowerKeys(sent);
  if (nested === undefined || nested === null) return body;
  if (!isObject(nested)) throw new ScimError(400, 'invalidValue', `${coreSchema} must be an object of the resource's attributes`);
  return { ...body, ...lowerKeys(nested) };
}

/** A SCIM boolean: true/false, or the strings Entra ID sends ("True", "False", in any case). */
export function scimBoolean(value: unknown, what: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw new ScimError(400, 'invalidValue', `${what} must be a boolean`);
}

/** Whether `text` is one of our ids as SCIM shows them: a positive decimal, without leading zeros. */
export function isScimId(text: string): boolean {
  return /^[1-9][0-9]{0,18}$/.test(text) && BigInt(text) <= INT8_MAX;
}

/** The address form the checks take: something@something, no white space. */
export function isAddress(text: string): boolean {
  return /^[^\s@]+@[^\s@]+$/.test(text);
}

const PHONE = new RegExp(Phone.pattern!);
/** A phone number as the REST API's Phone schema takes it (digits, spaces, + and -; its length). */
export function isPhone(text: string): boolean {
  return text.length <= Phone.maxLength! && PHONE.test(text);
}
