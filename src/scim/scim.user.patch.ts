import { ScimError } from './scim.error.js';
import { eachOperation, type Kind, type PatchOperation } from './scim.patch.js';
import { emptyAsNull, isObject, scimBoolean } from './scim.values.js';
import { ENTERPRISE_USER_SCHEMA, isStoredEntry, pickValue, USER_SCHEMA, type UserState } from './scim.user.state.js';

// PATCH of a User (RFC 7644 §3.5.2) on its state (scim.user.state.ts), as the
// providers send it (docs/scim.md#patch): `op` in any case
// (Entra ID writes "Replace"), a path with or without the schema URN, value
// paths such as `emails[type eq "work"].value`, and no path at all with a
// value object whose keys may be dotted (`"name.givenName"`). A user has one
// email and one phone number, so any value path on `emails` or
// `phoneNumbers` names that one. Attributes this service does not keep
// (`title`, `addresses`, ...) and the read-only ones (`groups`, the
// enterprise `department`) are passed over, not refused: providers map them
// by default, and refusing them would stop provisioning altogether.

function text(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new ScimError(400, 'invalidValue', `${what} must be a string`);
  return value;
}

/** `name[filter].sub`, `name.sub` or `name`, lower-cased, without the core schema's URN. Undefined for the enterprise extension. */
function splitPath(raw: string): { attribute: string; filter: string | undefined; sub: string | undefined } | undefined {
  let path = raw.trim();
  if (path.toLowerCase().startsWith(`${ENTERPRISE_USER_SCHEMA.toLowerCase()}:`)) return undefined;
  if (path.toLowerCase().startsWith(`${USER_SCHEMA.toLowerCase()}:`)) path = path.slice(USER_SCHEMA.length + 1);
  const match = /^([A-Za-z][\w$-]*)(?:\[([^\]]*)\])?(?:\.([A-Za-z][\w$-]*))?$/.exec(path);
  if (!match) throw new ScimError(400, 'invalidPath', `path ${JSON.stringify(raw)} is not an attribute path`);
  return { attribute: match[1]!.toLowerCase(), filter: match[2], sub: match[3]?.toLowerCase() };
}

/**
 * Whether a value path's filter (`type eq "work"`, `primary eq true`,
 * `value eq "..."`) selects the one entry the user's field holds
 * (isStoredEntry): an operation on a `mobile` phone or a `home` address
 * leaves the work one alone.
 */
function selectsStored(filter: string, attribute: 'emails' | 'phonenumbers', current: string | null): boolean {
  const match = /^\s*(type|primary|value)\s+eq\s+("([^"]*)"|true|false)\s*$/i.exec(filter);
  if (!match) throw new ScimError(400, 'invalidFilter', `${attribute}[${filter}]: only type, primary or value eq "..." selects an entry`);
  const [, field, literal, quoted] = match;
  const key = field!.toLowerCase();
  if (key === 'value') return quoted !== undefined && current !== null && quoted.toLowerCase() === current.toLowerCase();
  return isStoredEntry({ [key]: quoted ?? literal!.toLowerCase() === 'true' }, attribute);
}

/**
 * What the field becomes after an operation on its multi-valued attribute,
 * or undefined when the operation is about entries the field does not hold:
 * a string (the path ends in `.value`), an entry, or an array of entries
 * (replace takes the stored entry of the array, or none; add changes the
 * field only when the array has one).
 */
function multiValued(kind: Kind, value: unknown, sub: string | undefined, what: 'emails' | 'phoneNumbers'): string | null | undefined {
  if (sub !== undefined) return value === null ? null : emptyAsNull(text(value, `${what}.value`));
  const list = Array.isArray(value) ? value : isObject(value) ? [value] : undefined;
  if (!list) throw new ScimError(400, 'invalidValue', `${what} must be an array of {value, type}`);
  const picked = pickValue(list, what);
  return picked === null && kind === 'add' ? undefined : picked;
}

function applyMultiValued(
  state: UserState,
  kind: Kind,
  target: { attribute: string; filter: string | undefined; sub: string | undefined },
  value: unknown,
): void {
  const attribute = target.attribute === 'emails' ? 'emails' : 'phonenumbers';
  const field = attribute === 'emails' ? 'email' : 'phone';
  if (target.sub !== undefined && target.sub !== 'value') return;
  if (target.filter !== undefined && !selectsStored(target.filter, attribute, state[field])) return;
  if (kind === 'remove') {
    state[field] = null;
    return;
  }
  // With a filter that selects the stored entry, the value is that entry's (or its `value`'s) new value.
  const next =
    target.filter !== undefined && target.sub === undefined && isObject(value)
      ? value.value === undefined
        ? state[field]
        : emptyAsNull(text(value.value, `${target.attribute}.value`))
      : multiValued(kind, value, target.sub, attribute === 'emails' ? 'emails' : 'phoneNumbers');
  if (next !== undefined) state[field] = next;
}

function apply(state: UserState, kind: Kind, path: string, value: unknown): void {
  const target = splitPath(path);
  if (!target) return;
  const { attribute, sub } = target;
  const removing = kind === 'remove';
  switch (attribute) {
    case 'username':
      if (removing) throw new ScimError(400, 'mutability', 'userName is required and cannot be removed');
      state.userName = text(value, 'userName');
      return;
    case 'displayname':
      state.nickName = removing || value === null ? '' : text(value, 'displayName');
      return;
    case 'externalid':
      state.externalId = removing || value === null ? null : emptyAsNull(text(value, 'externalId'));
      return;
    case 'active':
      if (removing) throw new ScimError(400, 'mutability', 'active cannot be removed; replace it with true or false');
      state.active = scimBoolean(value, 'active');
      return;
    case 'password':
      if (removing) throw new ScimError(400, 'mutability', 'password cannot be removed');
      state.password = text(value, 'password');
      return;
    case 'name':
      return applyName(state, removing, sub, value);
    case 'emails':
    case 'phonenumbers':
      applyMultiValued(state, kind, target, value);
      return;
    default:
      // Not kept here (or read-only): passed over, see the top of this file.
      return;
  }
}

function applyName(state: UserState, removing: boolean, sub: string | undefined, value: unknown): void {
  if (sub === undefined) {
    if (removing) {
      state.givenName = null;
      state.familyName = null;
      return;
    }
    if (!isObject(value)) throw new ScimError(400, 'invalidValue', 'name must be an object');
    // Sub-attributes left out of the value stay as they are (RFC 7644 §3.5.2.3).
    for (const [key, v] of Object.entries(value)) applyName(state, false, key.toLowerCase(), v);
    return;
  }
  const part = removing || value === null ? null : text(value, `name.${sub}`);
  if (sub === 'givenname') state.givenName = part;
  else if (sub === 'familyname') state.familyName = part;
  // name.formatted stands in for displayName only when there is none.
  else if (sub === 'formatted' && state.nickName === '' && part !== null) state.nickName = part;
}

/** The state after the operations, in order; the caller checks the result (checkUserState) before writing it. */
export function applyUserPatch(state: UserState, operations: PatchOperation[]): UserState {
  const next = { ...state };
  eachOperation(operations, (kind, path, value) => apply(next, kind, path, value));
  return next;
}
