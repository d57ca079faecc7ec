import { ScimError } from './scim.error.js';
import { isObject } from './scim.values.js';

// What a PATCH request (RFC 7644 §3.5.2) is, whatever resource it changes:
// its operations, their kind in any case (Entra ID writes "Replace"), and a
// pathless operation read as one operation per attribute its value names.
// scim.user.patch.ts and scim.group.patch.ts say what each path does.

export interface PatchOperation {
  op: string;
  path?: string;
  value?: unknown;
}

export type Kind = 'add' | 'replace' | 'remove';

function kindOf(op: unknown): Kind {
  const kind = typeof op === 'string' ? op.toLowerCase() : '';
  if (kind === 'add' || kind === 'replace' || kind === 'remove') return kind;
  throw new ScimError(400, 'invalidSyntax', `op ${JSON.stringify(op)} is not add, replace or remove`);
}

/**
 * Calls `apply` once per (kind, path, value), in order. Without a path the
 * value is an object whose keys are paths (dotted ones included); a key that
 * is a schema URN holds that schema's attributes, passed on as
 * `<urn>:<attribute>` paths for the resource to take or pass over.
 */
export function eachOperation(operations: PatchOperation[], apply: (kind: Kind, path: string, value: unknown) => void): void {
  for (const operation of operations) {
    const kind = kindOf(operation.op);
    if (operation.path !== undefined && operation.path !== '') {
      apply(kind, operation.path, operation.value);
      continue;
    }
    if (kind === 'remove') throw new ScimError(400, 'noTarget', 'remove needs a path');
    if (!isObject(operation.value)) throw new ScimError(400, 'invalidValue', `${kind} without a path needs an object value`);
    for (const [key, value] of Object.entries(operation.value)) {
      if (key.toLowerCase() === 'schemas') continue;
      if (key.toLowerCase().startsWith('urn:') && isObject(value)) {
        for (const [name, inner] of Object.entries(value)) apply(kind, `${key}:${name}`, inner);
      } else {
        apply(kind, key, value);
      }
    }
  }
}
