import { EMAIL_MAX, NICK_NAME_MAX, USER_NAME_MAX } from '../core/limits.js';
import { ScimError } from './scim.error.js';
import { bodyAttributes, emptyAsNull, isAddress, isObject, isPhone, lowerKeys, optionalString, scimBoolean } from './scim.values.js';

// A SCIM User as the fields it maps to (docs/scim.md#users): read from a
// POST or PUT body, changed by PATCH operations (scim.patch.ts), checked, then
// written by scim.user.sql.ts. The mapping, both ways, lives here.

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

export interface UserState {
  userName: string;
  /** displayName, else name.formatted. */
  nickName: string;
  givenName: string | null;
  familyName: string | null;
  /** emails: the work one, else the primary one, else one with no type (isStoredEntry). */
  email: string | null;
  /** phoneNumbers: the work one, else one with no type (isStoredEntry). */
  phone: string | null;
  active: boolean;
  externalId: string | null;
  /** Write-only: set only when a body or operation sends one. */
  password?: string;
}

type Json = Record<string, unknown>;

const isTrue = (v: unknown) => v === true || (typeof v === 'string' && v.toLowerCase() === 'true');

/**
 * Whether an entry of `emails` or `phoneNumbers` is the one the user's field
 * holds: the `work` one (for emails, also the `primary` one), or one that
 * names no type. A `home`, `mobile` or `fax` entry is not kept here.
 */
export function isStoredEntry(entry: Json, attribute: 'emails' | 'phonenumbers'): boolean {
  const type = typeof entry.type === 'string' ? entry.type.toLowerCase() : undefined;
  if (type === 'work') return true;
  if (attribute === 'emails' && isTrue(entry.primary)) return true;
  return type === undefined;
}

/** The value the user's field takes from a multi-valued attribute: its work entry, else (emails) its primary one, else an untyped one; null when none or empty. */
export function pickValue(list: unknown, what: 'emails' | 'phoneNumbers'): string | null {
  if (list === undefined || list === null) return null;
  if (!Array.isArray(list)) throw new ScimError(400, 'invalidValue', `${what} must be an array`);
  const entries = list.filter(isObject);
  const attribute = what === 'emails' ? 'emails' : 'phonenumbers';
  const chosen =
    entries.find((e) => typeof e.type === 'string' && e.type.toLowerCase() === 'work') ??
    (attribute === 'emails' ? entries.find((e) => isTrue(e.primary)) : undefined) ??
    entries.find((e) => isStoredEntry(e, attribute));
  return chosen ? emptyAsNull(optionalString(chosen.value, `${what}.value`)) : null;
}

/** A POST or PUT body as a state; what the body leaves out takes its default (PUT replaces). */
export function stateFromBody(sent: Json): UserState {
  const body = bodyAttributes(sent, USER_SCHEMA);
  const name = isObject(body.name) ? lowerKeys(body.name) : {};
  const userName = body.username;
  if (typeof userName !== 'string') throw new ScimError(400, 'invalidValue', 'userName is required');
  const password = body.password;
  if (password !== undefined && typeof password !== 'string') throw new ScimError(400, 'invalidValue', 'password must be a string');
  return {
    userName,
    nickName: optionalString(body.displayname, 'displayName') ?? optionalString(name.formatted, 'name.formatted') ?? '',
    givenName: optionalString(name.givenname, 'name.givenName'),
    familyName: optionalString(name.familyname, 'name.familyName'),
    email: pickValue(body.emails, 'emails'),
    phone: pickValue(body.phonenumbers, 'phoneNumbers'),
    active: body.active === undefined || body.active === null ? true : scimBoolean(body.active, 'active'),
    externalId: emptyAsNull(optionalString(body.externalid, 'externalId')),
    ...(password === undefined ? {} : { password }),
  };
}

/** The limits of the columns and of the REST API's user fields, as SCIM errors (400 invalidValue). */
export function checkUserState(state: UserState): UserState {
  const fail = (detail: string): never => {
    throw new ScimError(400, 'invalidValue', detail);
  };
  if (state.userName.length < 1 || state.userName.length > USER_NAME_MAX || /\s/.test(state.userName)) {
    fail(`userName must be 1 to ${USER_NAME_MAX} characters without white space`);
  }
  // In characters, as the REST API and the column count them (an emoji is one).
  if ([...state.nickName].length > NICK_NAME_MAX) fail(`displayName must be at most ${NICK_NAME_MAX} characters`);
  for (const [what, value] of [
    ['name.givenName', state.givenName],
    ['name.familyName', state.familyName],
    ['externalId', state.externalId],
  ] as const) {
    if (value !== null && value.length > 255) fail(`${what} must be at most 255 characters`);
  }
  if (state.email !== null && (state.email.length > EMAIL_MAX || !isAddress(state.email))) fail(`emails value "${state.email}" is not an address`);
  if (state.phone !== null && !isPhone(state.phone)) fail('phoneNumbers value: at most 20 digits, spaces, + and -');
  if (state.password !== undefined && (state.password.length < 8 || state.password.length > 128)) fail('password must be 8 to 128 characters');
  return state;
}
