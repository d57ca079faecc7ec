import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { Db } from './database.js';
import { DateTime, Nullable } from '../core/common.schema.js';
import { formatDateTime } from '../core/time.js';

// One field list per entity: each API field names its column, its schema
// and, for writes, its default. The SELECT list, the row-to-DTO mapping,
// the write columns and the TypeBox schemas are all derived from it, so a
// field is added or renamed in one place (plus its migration).

export interface Field<S extends TSchema = TSchema> {
  column: string;
  schema: S;
  /** Read as text: 19-digit ids (beyond a JS number) and dates (kept as YYYY-MM-DD, not a JS Date). */
  asText: boolean;
  /** Turns the value read into the API's form; `row` is the whole row read, keyed by API name (for a field one of its neighbours qualifies). */
  read?: (value: never, row: Record<string, unknown>) => unknown;
  /** Writable fields: `required` ones must be sent; the others take `default` when omitted (full-replacement PUT). */
  write?: { required: true } | { default: unknown };
}
export type Fields = Record<string, Field>;

export function field<S extends TSchema>(column: string, schema: S, options: Partial<Omit<Field, 'column' | 'schema'>> = {}): Field<S> {
  return { column, schema, asText: false, ...options };
}

/** The four bookkeeping fields every entity carries; times leave as `YYYY-MM-DD HH:mm:ss` in TZ. */
export const AUDIT_FIELDS = {
  createBy: field('create_by', Type.String()),
  createTime: field('create_time', DateTime, { read: formatDateTime }),
  updateBy: field('update_by', Type.String()),
  updateTime: field('update_time', Nullable(DateTime), { read: formatDateTime }),
};

/** The TypeBox properties of a field list, each under its API name. */
export function propertiesOf<F extends Fields>(fields: F): { [K in keyof F]: F[K]['schema'] } {
  return Object.fromEntries(Object.entries(fields).map(([name, f]) => [name, f.schema])) as { [K in keyof F]: F[K]['schema'] };
}

type Fragment = ReturnType<Db['unsafe']>;
const NAME_PATTERNS = { identifier: /^[a-z_][a-z0-9_]*$/, apiName: /^[A-Za-z][A-Za-z0-9]*$/ };

/**
 * `name` itself, once checked to be a plain SQL identifier (a column or an
 * alias) or a plain API name: the guard for SQL text this code composes from
 * its own field lists (selectList, the audit record's column list), so no
 * quote or other SQL can get into such text, whatever a list says.
 */
export function plainName(name: string, kind: keyof typeof NAME_PATTERNS): string {
  if (!NAME_PATTERNS[kind].test(name)) throw new Error(`Field list: ${JSON.stringify(name)} is not a plain ${kind}`);
  return name;
}

/**
 * `alias.column AS "name", …` for every field: rows come back keyed by API
 * name. Built once per field list and alias, as one piece of text, and
 * reused. Why not a postgres.js fragment per column: building one captures a
 * stack trace, and nested fragments are walked again on every statement;
 * together they cost a by-id read more than the rest of its work. The
 * text holds only names written in this code's field lists, each checked to
 * be a plain identifier (plainName): never input.
 */
export function selectList(sql: Db, alias: string, fields: Fields): Fragment {
  return builtOnce(sql, fields, alias, () => selectListText(alias, fields));
}

const built = new WeakMap<object, Map<string, Fragment>>();

/**
 * The fragment of SQL text `build()` writes for `owner` (a field or column
 * list) under `key` (an alias, say), made on first use and reused: for text
 * composed from the code's own lists, every name checked by plainName.
 */
export function builtOnce(sql: Db, owner: object, key: string, build: () => string): Fragment {
  let byKey = built.get(owner);
  if (!byKey) built.set(owner, (byKey = new Map()));
  let text = byKey.get(key);
  if (!text) byKey.set(key, (text = sql.unsafe(build())));
  return text;
}

function selectListText(alias: string, fields: Fields): string {
  return entriesOf(fields)
    .map(
      ([name, f]) =>
        `${plainName(alias, 'identifier')}.${plainName(f.column, 'identifier')}${f.asText ? '::text' : ''} AS "${plainName(name, 'apiName')}"`,
    )
    .join(', ');
}

const entries = new WeakMap<Fields, [string, Field][]>();
/** Object.entries of a field list, once: fromRow runs for every row read. */
function entriesOf(fields: Fields): [string, Field][] {
  let list = entries.get(fields);
  if (!list) entries.set(fields, (list = Object.entries(fields)));
  return list;
}

/** The API values of `fields` from a row read with selectList. */
export function fromRow<F extends Fields>(row: Record<string, unknown>, fields: F): { [K in keyof F]: Static<F[K]['schema']> } {
  const out: Record<string, unknown> = {};
  for (const [name, f] of entriesOf(fields)) out[name] = f.read ? f.read(row[name] as never, row) : row[name];
  return out as { [K in keyof F]: Static<F[K]['schema']> };
}

/** `{column: value}` of the writable fields, from what was sent, defaults for what was not. */
export function writeColumns(fields: Fields, sent: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(fields)) {
    if (!f.write) continue;
    out[f.column] = sent[name] ?? ('default' in f.write ? f.write.default : undefined);
  }
  return out;
}
