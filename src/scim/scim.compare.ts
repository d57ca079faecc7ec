import type { PendingQuery, Row } from 'postgres';
import type { Db } from '../db/database.js';
import { invalidFilter, shown } from './scim.error.js';
import type { CompareOp, Literal } from './scim.filter.js';

// One comparison of a SCIM filter (RFC 7644 §3.4.2.2) on one attribute, as
// SQL: the leaves of the tree scim.filter.where.ts translates, and the
// attribute they compare (where it is stored, its type). Each is two-valued
// (false, never NULL, where the column has no value), which is what lets
// scim.filter.where.ts read `not` and `ne` as plain complements. The literal is
// always a bound parameter.

type Fragment = PendingQuery<Row[]>;

type AttributeType = 'string' | 'boolean' | 'dateTime' | 'id';

/** A single-valued attribute (or a sub-attribute) and where it is stored. */
export interface FilterAttribute {
  /** The column or expression, on the alias the caller's statement uses. */
  column: (sql: Db) => Fragment;
  /**
   * string: text, compared as SCIM strings; boolean: a boolean expression;
   * dateTime: a timestamptz; id: a bigint id, which SCIM shows as its
   * decimal string.
   */
  type: AttributeType;
  /** Whether string comparisons respect case (RFC 7643 §2.3.1); false compares lower() of both sides. */
  caseExact: boolean;
}

/** RFC 7644 `pr`: has a value; for a string, a non-empty one (RFC 7643 §2.5 treats "" as unassigned). */
export function present(sql: Db, a: FilterAttribute): Fragment {
  const column = a.column(sql);
  return a.type === 'string' ? sql`(${column} IS NOT NULL AND ${column} <> '')` : sql`(${column} IS NOT NULL)`;
}

/** A comparison that is false, not NULL, where the column is NULL. */
const known = (sql: Db, column: Fragment, comparison: Fragment) => sql`(${column} IS NOT NULL AND ${comparison})`;

/** ne is translated as not eq, so it never reaches here. */
export type Operator = Exclude<CompareOp, 'ne'>;

export function compare(sql: Db, a: FilterAttribute, path: string, op: Operator, value: Literal): Fragment {
  // filterToSql turns eq and ne with null into pr; nothing else compares with null.
  if (value === null) throw invalidFilter(`${shown(path)} ${op} null: only eq and ne compare with null`);
  switch (a.type) {
    case 'boolean':
      return compareBoolean(sql, a, path, op, value);
    case 'id':
      return compareId(sql, a, path, op, value);
    case 'dateTime':
      return compareDateTime(sql, a, path, op, value);
    case 'string':
      if (typeof value !== 'string') throw invalidFilter(`${shown(path)} is a string: compare it with a quoted string`);
      return compareString(sql, a.column(sql), a.caseExact, op, value);
  }
}

/**
 * Booleans take eq and ne only (RFC 7644 §3.4.2.2: other operators on a
 * boolean are invalidFilter). "True"/"False" as strings, in any case, are
 * accepted too: Microsoft Entra ID sends `active eq "False"`.
 */
function compareBoolean(sql: Db, a: FilterAttribute, path: string, op: Operator, value: Literal): Fragment {
  if (op !== 'eq') throw invalidFilter(`${shown(path)} is a boolean: only eq, ne and pr apply`);
  const text = typeof value === 'string' ? value.toLowerCase() : undefined;
  const flag = typeof value === 'boolean' ? value : text === 'true' ? true : text === 'false' ? false : undefined;
  if (flag === undefined) throw invalidFilter(`${shown(path)} is a boolean: compare it with true or false`);
  const column = a.column(sql);
  return known(sql, column, sql`${column} = ${flag}::boolean`);
}

/** The largest bigint: a longer decimal string is no id of ours. */
const MAX_ID = 9223372036854775807n;

/**
 * SCIM ids are strings (RFC 7643 §3.1); ours are the decimal form of the
 * bigint key. `eq` compares the number, so the key's
 * index serves it; a literal that is not such a decimal (`"abc"`, `"012"`)
 * is no id of ours and matches nothing, rather than being a 400: it is a
 * well-formed filter for a string attribute. Other operators compare the
 * decimal string as a case-exact string.
 */
function compareId(sql: Db, a: FilterAttribute, path: string, op: Operator, value: Literal): Fragment {
  const text = typeof value === 'string' ? value : typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : undefined;
  if (text === undefined) throw invalidFilter(`${shown(path)} is a string: compare it with a quoted string`);
  const column = a.column(sql);
  if (op !== 'eq') return compareString(sql, sql`${column}::text`, true, op, text);
  if (!/^(0|[1-9][0-9]*)$/.test(text) || BigInt(text) > MAX_ID) return sql`false`;
  return known(sql, column, sql`${column} = ${text}::bigint`);
}

/** xsd:dateTime (RFC 7643 §2.3.5): a date, a time, optional fraction, optional zone (UTC when left out). */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})?$/i;

function compareDateTime(sql: Db, a: FilterAttribute, path: string, op: Operator, value: Literal): Fragment {
  if (op === 'co' || op === 'sw' || op === 'ew') throw invalidFilter(`${shown(path)} is a dateTime: co, sw and ew do not apply`);
  const text = typeof value === 'string' ? value : '';
  const match = DATE_TIME.exec(text);
  const time = new Date(match?.[8] ? text : `${text}Z`);
  if (!match || Number.isNaN(time.getTime()) || !realDateTime(match)) {
    throw invalidFilter(`${shown(path)} is a dateTime: compare it with an ISO 8601 date-time such as "2024-05-13T04:42:34Z"`);
  }
  const column = a.column(sql);
  const at = sql`${time.toISOString()}::timestamptz`;
  return known(sql, column, ordered(sql, column, op, at));
}

/** Whether the written fields are a real date and time: Date would roll 2021-02-30 over to March 2. */
function realDateTime(match: RegExpExecArray): boolean {
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const d = new Date(Date.UTC(year, month - 1, day));
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day && hour < 24 && minute < 60 && second < 60;
}

/** `a op b` for the operators that compare by order or equality; op comes from the closed CompareOp set. */
function ordered(sql: Db, a: Fragment, op: 'eq' | 'gt' | 'ge' | 'lt' | 'le', b: Fragment): Fragment {
  switch (op) {
    case 'eq':
      return sql`${a} = ${b}`;
    case 'gt':
      return sql`${a} > ${b}`;
    case 'ge':
      return sql`${a} >= ${b}`;
    case 'lt':
      return sql`${a} < ${b}`;
    case 'le':
      return sql`${a} <= ${b}`;
  }
}

/**
 * String comparisons (RFC 7644 §3.4.2.2). Case-insensitive attributes
 * compare lower() of both sides. co, sw and ew use strpos, starts_with and
 * right() rather than LIKE: with LIKE the client's `%`, `_` and `\` would be
 * wildcards unless escaped, and one missed escape turns `co "_"` into "any
 * character"; these functions take the literal as plain text, so nothing in
 * it can act as a pattern. gt/ge/lt/le order by code point (COLLATE "C"):
 * the same answer on every database, whatever its default collation.
 */
function compareString(sql: Db, column: Fragment, caseExact: boolean, op: Operator, value: string): Fragment {
  const norm = (x: Fragment) => (caseExact ? x : sql`lower(${x})`);
  const col = norm(column);
  const lit = () => norm(sql`${value}::text`);
  switch (op) {
    case 'eq':
      return known(sql, column, sql`${col} = ${lit()}`);
    case 'co':
      return known(sql, column, sql`strpos(${col}, ${lit()}) > 0`);
    case 'sw':
      return known(sql, column, sql`starts_with(${col}, ${lit()})`);
    case 'ew':
      return known(sql, column, sql`right(${col}, length(${lit()})) = ${lit()}`);
    default:
      return known(sql, column, ordered(sql, sql`${col} COLLATE "C"`, op, sql`${lit()} COLLATE "C"`));
  }
}
