import { ScimError } from './scim.error.js';
import type { ListQuery } from './scim.schema.js';

// What every SCIM resource type shares (RFC 7644 §3.4.2): its id in a path,
// the page a list asks for, the ListResponse, and the attributes a client
// asks to see or to leave out.

const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
/** filter.maxResults in /ServiceProviderConfig. */
export const MAX_RESULTS = 200;
const DEFAULT_COUNT = 100;

/** A resource id from a path: our ids are decimal; anything else names no resource (404, as an unknown id). */
export function scimId(raw: string, what: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(raw)) throw new ScimError(404, undefined, `${what} ${raw} not found`);
  return Number(raw);
}

/** RFC 7644 §3.4.2.4: startIndex below 1 is 1; count below 0 is 0; above the maximum, the maximum. */
export function pageOf(query: ListQuery): { startIndex: number; count: number } {
  return {
    startIndex: Math.max(1, query.startIndex ?? 1),
    count: Math.min(MAX_RESULTS, Math.max(0, query.count ?? DEFAULT_COUNT)),
  };
}

export function listResponse(total: number, startIndex: number, resources: object[]) {
  return { schemas: [LIST_SCHEMA], totalResults: total, startIndex, itemsPerPage: resources.length, Resources: resources };
}

/** Attribute names as a client writes them (`name.givenName`, with or without a schema URN), lower-cased, without the URN of `schemas`. */
function names(list: string | undefined, schemas: string[]): string[] {
  if (list === undefined || list.trim() === '') return [];
  return list.split(',').map((raw) => {
    let name = raw.trim();
    for (const schema of schemas) if (name.toLowerCase().startsWith(`${schema.toLowerCase()}:`)) name = name.slice(schema.length + 1);
    return name.toLowerCase();
  });
}

/** Always returned (RFC 7643 §7 `returned: always`), whatever `attributes` says. */
const ALWAYS = new Set(['schemas', 'id', 'meta']);

/**
 * `attributes` keeps only the named attributes (and those always returned);
 * `excludedAttributes` drops the named ones. A dotted name reaches one level
 * into a complex attribute (`name.givenName`). Names are case-insensitive.
 */
export function project<T extends { schemas: string[] }>(resource: T, query: Pick<ListQuery, 'attributes' | 'excludedAttributes'>): Partial<T> {
  const keep = names(query.attributes, resource.schemas);
  const drop = names(query.excludedAttributes, resource.schemas);
  if (keep.length === 0 && drop.length === 0) return resource;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(resource)) {
    const lower = key.toLowerCase();
    if (keep.length > 0 && !ALWAYS.has(lower)) {
      if (keep.includes(lower)) out[key] = value;
      else {
        const subs = keep.filter((n) => n.startsWith(`${lower}.`)).map((n) => n.slice(lower.length + 1));
        if (subs.length > 0 && typeof value === 'object' && value !== null && !Array.isArray(value)) {
          out[key] = Object.fromEntries(Object.entries(value).filter(([k]) => subs.includes(k.toLowerCase())));
        } else if (subs.length > 0 && Array.isArray(value)) {
          out[key] = (value as unknown as Record<string, unknown>[]).map((item) =>
            Object.fromEntries(Object.entries(item).filter(([k]) => subs.includes(k.toLowerCase()))),
          );
        }
      }
      continue;
    }
    if (!ALWAYS.has(lower) && drop.includes(lower)) continue;
    out[key] = value;
  }
  return out as Partial<T>;
}
