import { idFromText, type Id } from '../core/ids.js';
import { ScimError } from './scim.error.js';
import { DEPT_EXTENSION, GROUP_SCHEMA, memberIds, setExtension, type GroupState } from './scim.group.state.js';
import { emptyAsNull, isScimId } from './scim.values.js';
import { eachOperation, type Kind, type PatchOperation } from './scim.patch.js';

// PATCH of a Group (RFC 7644 §3.5.2) on its state (scim.group.state.ts), as
// Okta and Entra ID send it (docs/scim.md#groups): members added with a value
// array, removed by a value path (`members[value eq "12"]`) or, as Entra ID
// does, by `path: "members"` with a value array; `op` in any case;
// displayName and the department extension by path or in a pathless value.

/** The member ids a `members[value eq "12"]` path names (an `or` of such terms too). */
function membersInPath(filter: string): Id[] {
  const terms = filter.split(/\s+or\s+/i);
  return terms.map((term) => {
    const match = /^\s*value\s+eq\s+"([^"]*)"\s*$/i.exec(term);
    if (!match) throw new ScimError(400, 'invalidFilter', `members[${filter}]: only value eq "<id>" (joined with or) selects members`);
    // An id no member can have selects nothing.
    return isScimId(match[1]!) ? idFromText(match[1]!) : -1;
  });
}

function apply(state: GroupState, kind: Kind, rawPath: string, value: unknown): void {
  let path = rawPath.trim();
  const lower = path.toLowerCase();
  if (lower.startsWith(`${DEPT_EXTENSION.toLowerCase()}:`)) {
    const name = path.slice(DEPT_EXTENSION.length + 1);
    setExtension(state, name, kind === 'remove' ? null : value);
    return;
  }
  if (lower.startsWith(`${GROUP_SCHEMA.toLowerCase()}:`)) path = path.slice(GROUP_SCHEMA.length + 1);
  const members = /^members(?:\[(.*)\])?(?:\.value)?$/i.exec(path);
  if (members) {
    const selected = members[1] === undefined ? undefined : membersInPath(members[1]);
    if (selected !== undefined && kind !== 'add' && !state.members.some((id) => selected.includes(id))) {
      // RFC 7644 §3.5.2.2-3: a value path that selects nothing has no target (a remove of a member already gone is fine).
      if (kind === 'replace') throw new ScimError(400, 'noTarget', `${rawPath} selects no member of this group`);
      return;
    }
    if (kind === 'add') {
      state.members = [...state.members, ...memberIds(value)];
    } else if (kind === 'replace') {
      // With a value path, only the selected members are replaced by the value's; without, all of them.
      const kept = selected === undefined ? [] : state.members.filter((id) => !selected.includes(id));
      state.members = [...kept, ...memberIds(value)];
    } else {
      // remove: the members the path selects, else those the value lists (Entra ID), else all of them.
      const gone = new Set(selected ?? (value === undefined || value === null ? state.members : memberIds(value)));
      state.members = state.members.filter((id) => !gone.has(id));
    }
    return;
  }
  if (!/^[A-Za-z][\w$-]*(?:\.[A-Za-z][\w$-]*)?$/.test(path))
    throw new ScimError(400, 'invalidPath', `path ${JSON.stringify(rawPath)} is not an attribute path`);
  switch (path.toLowerCase()) {
    case 'displayname':
      if (kind === 'remove') throw new ScimError(400, 'mutability', 'displayName is required and cannot be removed');
      if (typeof value !== 'string') throw new ScimError(400, 'invalidValue', 'displayName must be a string');
      state.displayName = value;
      return;
    case 'externalid':
      if (kind === 'remove' || value === null) state.externalId = null;
      else if (typeof value === 'string') state.externalId = emptyAsNull(value);
      else throw new ScimError(400, 'invalidValue', 'externalId must be a string');
      return;
    default:
      // Attributes a department does not keep are passed over, as for users (docs/scim.md#users).
      return;
  }
}

export function applyGroupPatch(state: GroupState, operations: PatchOperation[]): GroupState {
  const next = { ...state, members: [...state.members] };
  eachOperation(operations, (kind, path, value) => apply(next, kind, path, value));
  return next;
}
