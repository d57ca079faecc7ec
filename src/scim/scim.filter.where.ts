import type { PendingQuery, Row } from 'postgres';
import type { Db } from '../db/database.js';
import { invalidFilter, shown } from './scim.error.js';
import type { Filter } from './scim.filter.js';
import { compare, present, type FilterAttribute } from './scim.compare.js';

// A parsed SCIM filter (scim.filter.ts) translated into a postgres.js
// fragment for a WHERE. Nothing from the filter text ever becomes SQL text:
// literals are bound parameters, and columns come only from the
// FilterAttributes the caller hands in (src/scim/scim.attributes.ts), looked
// up by the attribute's name. The comparisons at the leaves are in
// scim.compare.ts. An attribute the list does not name, or a comparison its
// type does not take, refuses the filter (400 invalidFilter), as the parser
// does a syntax error.

/** A piece of SQL built with the sql tag, to be placed inside another statement. */
type Fragment = PendingQuery<Row[]>;

/**
 * A multi-valued complex attribute (emails, members). `some` turns a
 * condition on one value (in terms of the sub-attributes' columns) into one
 * on the resource: true when at least one value meets it (an EXISTS, or
 * "the one stored value is set and meets it"). A value path's whole filter
 * goes inside one `some`, so `emails[type eq "work" and value co "@x"]` asks
 * for one email that is both, as RFC 7644 §3.4.2.2 means.
 */
interface MultiValuedAttribute {
  /** By lower-cased name; `value` is the one `emails eq "..."` (no sub-attribute) compares. */
  subAttributes: Record<string, FilterAttribute>;
  some: (sql: Db, condition: Fragment) => Fragment;
}

/** By lower-cased attribute path: bare (`username`, `name.givenname`) or schema-qualified (`urn:...:user:username`). */
export type FilterAttributes = Record<string, FilterAttribute | MultiValuedAttribute>;

const isMultiValued = (a: FilterAttribute | MultiValuedAttribute | undefined): a is MultiValuedAttribute => a !== undefined && 'some' in a;

/** Where a path is stored: the attribute, and the `some` of the multi-valued attribute it belongs to, if any. */
interface Resolved {
  attribute: FilterAttribute;
  some?: MultiValuedAttribute['some'];
}

const unknownAttribute = (path: string) => invalidFilter(`Unknown attribute ${shown(path)}`);

/** `emails.value` is the sub-attribute `value` of `emails`; the dot that splits is the first after the schema URN. */
function resolve(attributes: FilterAttributes, path: string): Resolved {
  const key = path.toLowerCase();
  const direct = attributes[key];
  if (direct && !isMultiValued(direct)) return { attribute: direct };
  // A multi-valued attribute named whole compares its `value` (`emails co "@x"`).
  const dot = key.indexOf('.', key.lastIndexOf(':') + 1);
  const multi = direct ?? (dot < 0 ? undefined : attributes[key.slice(0, dot)]);
  const sub = direct ? 'value' : key.slice(dot + 1);
  const attribute = isMultiValued(multi) ? multi.subAttributes[sub] : undefined;
  if (!attribute) throw unknownAttribute(path);
  return { attribute, some: (multi as MultiValuedAttribute).some };
}

/**
 * What names mean where a filter part stands: at the top, the resource's
 * attributes; inside `attr[...]`, the sub-attributes of one value of attr.
 */
interface Scope {
  find(path: string): Resolved;
  /** The multi-valued attribute a path names as a whole (`emails`), at the top only. */
  multi(path: string): MultiValuedAttribute | undefined;
}

/**
 * The filter as a condition for a WHERE, on the aliases `attributes` name:
 * `sql\`SELECT ... FROM sys_user u WHERE u.tenant_id = ${tenantId} AND (${fragment})\``.
 *
 * Every comparison is two-valued (true or false, never NULL), so `not` is the
 * plain complement: a resource matches `not (F)` exactly when it does not
 * match F. An attribute without a value (NULL, or no email) matches no
 * comparison, and so `ne`, defined as `not eq`, matches it: a user with no
 * email matches `emails.value ne "x"`. RFC 7644 §3.4.2.2 leaves `ne` on a
 * missing attribute open; this reading keeps `ne` and `not (eq)` the same
 * filter, and lets a client find "everyone but x" without also asking `or
 * not (emails pr)`. On a multi-valued attribute `ne` is then "no value
 * equals": `members.value ne "12"` are the groups without member 12.
 */
export function filterToSql(sql: Db, filter: Filter, attributes: FilterAttributes): Fragment {
  const top: Scope = {
    find: (path) => resolve(attributes, path),
    multi: (path) => {
      const whole = attributes[path.toLowerCase()];
      return isMultiValued(whole) ? whole : undefined;
    },
  };
  return translate(sql, filter, top);
}

function translate(sql: Db, f: Filter, scope: Scope): Fragment {
  switch (f.op) {
    case 'and':
      return sql`(${translate(sql, f.left, scope)} AND ${translate(sql, f.right, scope)})`;
    case 'or':
      return sql`(${translate(sql, f.left, scope)} OR ${translate(sql, f.right, scope)})`;
    case 'not':
      return sql`(NOT ${translate(sql, f.filter, scope)})`;
    case 'value': {
      const multi = scope.multi(f.path);
      if (!multi) {
        scope.find(f.path); // an unknown attribute is named as such
        throw invalidFilter(`${shown(f.path)} is not a multi-valued attribute: attribute[filter] needs one`);
      }
      const inside: Scope = {
        find: (sub) => {
          const attribute = multi.subAttributes[sub.toLowerCase()];
          if (!attribute) throw unknownAttribute(`${f.path}.${sub}`);
          return { attribute };
        },
        multi: () => undefined,
      };
      return multi.some(sql, translate(sql, f.filter, inside));
    }
    case 'pr': {
      // `emails pr`: some value at all; `emails.value pr`: some value with that sub-attribute present.
      const whole = scope.multi(f.path);
      if (whole) return whole.some(sql, sql`true`);
      const { attribute, some } = scope.find(f.path);
      const condition = present(sql, attribute);
      return some ? some(sql, condition) : condition;
    }
    default: {
      // `eq null` asks for no value (RFC 7643 §2.5: null is unassigned), `ne null` for one: `emails eq null` is no email at all.
      if (f.value === null && (f.op === 'eq' || f.op === 'ne')) {
        const pr = translate(sql, { op: 'pr', path: f.path }, scope);
        return f.op === 'eq' ? sql`(NOT ${pr})` : pr;
      }
      const { attribute, some } = scope.find(f.path);
      // ne is not eq, for the NULL reasons above.
      const condition = compare(sql, attribute, f.path, f.op === 'ne' ? 'eq' : f.op, f.value);
      const onResource = some ? some(sql, condition) : condition;
      return f.op === 'ne' ? sql`(NOT ${onResource})` : onResource;
    }
  }
}
