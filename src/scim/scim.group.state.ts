import { idFromText, type Id } from '../core/ids.js';
import { DEPT_NAME_MAX, INT4_MAX } from '../core/limits.js';
import { Email } from '../core/common.schema.js';
import { ScimError } from './scim.error.js';
import { bodyAttributes, emptyAsNull, isAddress, isObject, isPhone, isScimId, optionalString } from './scim.values.js';

// A SCIM Group as the department fields it maps to (docs/scim.md#groups):
// read from a POST or PUT body, changed by PATCH (scim.group.patch.ts),
// checked, then written by scim.group.sql.ts through the department and
// user write paths.

export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const DEPT_EXTENSION = 'urn:ietf:params:scim:schemas:extension:dept:2.0:Group';

export interface GroupState {
  /** deptName. */
  displayName: string;
  externalId: string | null;
  /** The parent group's id; 0 for a top-level department. */
  parentId: Id;
  orderNum: number;
  leader: string | null;
  phone: string | null;
  email: string | null;
  status: '0' | '1';
  /** The users whose department this is, by id. */
  members: Id[];
}

type Json = Record<string, unknown>;

const invalid = (detail: string): never => {
  throw new ScimError(400, 'invalidValue', detail);
};

/** An id as SCIM sends it (a string, sometimes a number). */
function idValue(value: unknown, what: string): Id {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !isScimId(text)) return invalid(`${what} must be the id of a resource of this tenant`);
  return idFromText(text);
}

/** parentId: a group's id, or absent/null/0 for the top level. */
function parentValue(value: unknown): Id {
  if (value === undefined || value === null || value === 0 || value === '0' || value === '') return 0;
  return idValue(value, 'parentId');
}

/** The ids of a `members` value: `[{value: "12"}, ...]`. */
export function memberIds(value: unknown): Id[] {
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value : [value];
  return list.map((m) => idValue(isObject(m) ? m.value : m, 'members.value'));
}

/** One attribute of the department extension set on `state`, from its name (any case). */
export function setExtension(state: GroupState, name: string, value: unknown): void {
  switch (name.toLowerCase()) {
    case 'parentid':
      state.parentId = parentValue(value);
      return;
    case 'ordernum':
      if (value === null || value === undefined) state.orderNum = 0;
      else if (typeof value === 'number' && Number.isInteger(value)) state.orderNum = value;
      else if (typeof value === 'string' && /^[0-9]{1,10}$/.test(value)) state.orderNum = Number(value);
      else invalid('orderNum must be an integer');
      return;
    case 'leader':
      state.leader = optionalString(value, 'leader');
      return;
    case 'phone':
      state.phone = optionalString(value, 'phone');
      return;
    case 'email':
      state.email = optionalString(value, 'email');
      return;
    case 'status':
      if (value === null || value === undefined) state.status = '0';
      else if (value === '0' || value === '1') state.status = value;
      else invalid('status must be "0" (normal) or "1" (disabled)');
      return;
    case 'ancestors':
      // Read-only, derived from parentId: a client echoing it back changes nothing.
      return;
    default:
      return;
  }
}

/** A POST or PUT body as a state; what the body leaves out takes its default (PUT replaces). */
export function groupFromBody(sent: Json): GroupState {
  const body = bodyAttributes(sent, GROUP_SCHEMA);
  const displayName = body.displayname;
  if (typeof displayName !== 'string') return invalid('displayName is required');
  const state: GroupState = {
    displayName,
    externalId: emptyAsNull(optionalString(body.externalid, 'externalId')),
    parentId: 0,
    orderNum: 0,
    leader: null,
    phone: null,
    email: null,
    status: '0',
    members: memberIds(body.members),
  };
  const extension = body[DEPT_EXTENSION.toLowerCase()];
  if (extension !== undefined && extension !== null) {
    if (!isObject(extension)) return invalid(`${DEPT_EXTENSION} must be an object`);
    for (const [name, value] of Object.entries(extension)) setExtension(state, name, value);
  }
  return state;
}

/** Members one group may have through SCIM. */
const MAX_MEMBERS = 1000;
/** A department's email, as the REST API takes it (its column was not widened; a user's was). */
const DEPT_EMAIL_MAX = Email.maxLength!;

/** The limits of the department fields, as SCIM errors (400 invalidValue); the rules (sibling names, cycles, depth) are the write paths'. */
export function checkGroupState(state: GroupState): GroupState {
  const name = state.displayName.trim();
  // In characters, as the REST API and the column count them (an emoji is one).
  const length = [...name].length;
  if (length < 1 || length > DEPT_NAME_MAX) invalid(`displayName must be 1 to ${DEPT_NAME_MAX} characters after trimming`);
  if (state.externalId !== null && state.externalId.length > 255) invalid('externalId must be at most 255 characters');
  if (state.orderNum < 0 || state.orderNum > INT4_MAX) invalid(`orderNum must be 0 to ${INT4_MAX}`);
  if (state.leader !== null && state.leader.length > 20) invalid('leader must be at most 20 characters');
  if (state.phone !== null && !isPhone(state.phone)) invalid('phone: at most 20 digits, spaces, + and -');
  if (state.email !== null && (state.email.length > DEPT_EMAIL_MAX || !isAddress(state.email)))
    invalid(`email "${state.email}" is not an address of at most 50 characters`);
  // Each member's move is its own write under the tenant's lock: a bound keeps one request from holding it for long.
  if (state.members.length > MAX_MEMBERS) invalid(`at most ${MAX_MEMBERS} members in one group`);
  return { ...state, members: [...new Set(state.members)] };
}
