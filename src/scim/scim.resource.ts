import { idFromText, type Id } from '../core/ids.js';
import { ScimError } from './scim.error.js';
import { isScimId } from './scim.values.js';
import type { ListQuery } from './scim.schema.js';

// What every SCIM resource type shares (RFC 7644 §3.4.2): its id in a path,
// the page a list asks for, the ListResponse, and the attributes a client
// asks to see or to leave out.

const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
/** filter.maxResults in /ServiceProviderConfig. */
export const MAX_RESULTS = 200;
const DEFAULT_COUNT = 100;

/** A resource id from a path: our ids are decimal; anything else names no resource (404, as an unknown id). */
export function scimId(raw: string, what: string): Id {
  if (!isScimId(raw)) throw new ScimError(404, undefined, `${what} ${raw} not found`);
  return idFromText(raw);
}

/** RFC 7644 §3.4.2.4: startIndex below 1 is 1; count below 0 is 0; above the maximum, the maximum. */
export function startIndexAndCount(query: ListQuery): { startIndex: number; count: number } {
  return {
    startIndex: Math.max(1, query.startIndex ?? 1),
    count: Math.min(MAX_RESULTS, Math.max(0, query.count ?? DEFAULT_COUNT)),
  };
}

export function listResponse(total: number, startIndex: number, resources: object[]) {
  return { schemas: [LIST_SCHEMA], totalResults: total, startIndex, itemsPerPage: resources.length, Resources: resources };
}

/**
 * Attribute names as a client writes them, lower-cased: `name.givenName`,
 * with or without the core schema's URN, or an extension's attribute as
 * `<extension urn>:<attribute>` (read as `<extension urn>.<attribute>`, the
 * extension's object and one of its keys). A repeated query parameter counts
 * as one list.
 */
function names(list: string | string[] | undefined, schemas: string[]): string[] {
  const text = Array.isArray(list) ? list.join(',') : list;
  if (text === undefined || text.trim() === '') return [];
  const [core, ...extensions] = schemas.map((s) => s.toLowerCase());
  return text.split(',').map((raw) => {
    const name = raw.trim().toLowerCase();
    if (core && name.startsWith(`${core}:`)) return name.slice(core.length + 1);
    const extension = extensions.find((urn) => name.startsWith(`${urn}:`));
    return extension ? `${extension}.${name.slice(extension.length + 1)}` : name;
  });
}

/** Always returned (RFC 7643 §7 `returned: always`), whatever `attributes` says. */
const ALWAYS = new Set(['schemas', 'id', 'meta']);

/** `value` (an object, or an array of objects) with only the sub-attributes `keep` accepts. */
function filterSubs(value: unknown, keep: (sub: string) => boolean): unknown {
  const pick = (item: Record<string, unknown>) => Object.fromEntries(Object.entries(item).filter(([k]) => keep(k.toLowerCase())));
  if (Array.isArray(value)) return (value as Record<string, unknown>[]).map(pick);
  if (typeof value === 'object' && value !== null) return pick(value as Record<string, unknown>);
  return value;
}

/**
 * `attributes` keeps only the named attributes (and those always returned);
 * `excludedAttributes` drops the named ones (RFC 7644 §3.4.2.5). A dotted
 * name reaches one level into a complex attribute or an extension
 * (`name.givenName`). Names are case-insensitive.
 */
export function project<T extends { schemas: string[] }>(resource: T, query: Pick<ListQuery, 'attributes' | 'excludedAttributes'>): Partial<T> {
  const keep = names(query.attributes, resource.schemas);
  const drop = names(query.excludedAttributes, resource.schemas);
  if (keep.length === 0 && drop.length === 0) return resource;
  const subsOf = (list: string[], lower: string) => list.filter((n) => n.startsWith(`${lower}.`)).map((n) => n.slice(lower.length + 1));
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(resource)) {
    const lower = key.toLowerCase();
    if (ALWAYS.has(lower)) {
      out[key] = value;
    } else if (keep.length > 0) {
      const subs = subsOf(keep, lower);
      if (keep.includes(lower)) out[key] = value;
      else if (subs.length > 0) out[key] = filterSubs(value, (sub) => subs.includes(sub));
    } else if (!drop.includes(lower)) {
      const subs = subsOf(drop, lower);
      out[key] = subs.length > 0 ? filterSubs(value, (sub) => !subs.includes(sub)) : value;
    }
  }
  return out as Partial<T>;
}
