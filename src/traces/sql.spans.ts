import { SpanKind, SpanStatusCode, type Attributes } from '@opentelemetry/api';
import type { Sql } from '../db/database.js';
import type { RecordedSpan } from './traces.span.js';

/**
 * A span per SQL statement (docs/operations.md#traces); postgres.js has no
 * instrumentation of its own. Only loaded with tracing on: off, the pool is
 * used as it is, unwrapped.
 *
 * A statement is a postgres.js Query that is *executed*: awaited, or sent
 * with .execute() (pipelined). The same Query object also serves as a
 * fragment inside another statement (sql`...` interpolated), and helpers
 * (sql(obj, ...columns), sql.json) make no Query at all; neither is ever
 * executed, so neither gets a span. The driver has no hook of its own for
 * this, so its patch adds one (patches/README.md, query-hook): a query's
 * `onexecute` is called once as it is executed, and the function it returns
 * once the driver settles it. The span starts there, under the span of the
 * request whose `sql` made the query, and ends when the query settles.
 *
 * Recorded: the statement text as sent, with $1, $2... where the values go
 * (never the values), the database name and, for a single-host URL, the
 * server. Only a sampled request's own `sql` records (src/traces/request.spans.ts):
 * a statement outside one (start-up, the audit feed's background work, a
 * request the sampler left out) runs on the pool as it is, at no cost; it
 * would be a trace of its own per statement.
 */

interface ExecutableQuery {
  handle(): Promise<void>;
  /** The patched driver's hook (query-hook): called once as the query is executed; what it returns, once it settles. */
  onexecute?: (query: ExecutableQuery) => ((error: unknown) => void) | void;
  /** The text postgres.js sent, with $n placeholders; set when the query is built for its connection. */
  string?: string;
  strings: readonly string[];
}

function isQuery(value: unknown): value is ExecutableQuery {
  return (
    value instanceof Promise &&
    typeof (value as Partial<ExecutableQuery>).handle === 'function' &&
    Array.isArray((value as Partial<ExecutableQuery>).strings)
  );
}

/** The text of a query that failed before it was built; placeholders stand where the values would go. */
function textOf(query: ExecutableQuery): string {
  return query.string ?? query.strings.join('$?');
}

/** The first word(s) of the statement, for the span's name: SELECT, INSERT, WITH... */
function operationOf(text: string): string {
  return /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase() ?? 'SQL';
}

/** What every statement span of a target shares. */
interface Statements {
  /** A statement span's attributes, all keys present from the start (the text filled in at its end): one shape for all. */
  attributes(): Attributes;
  /** The span's name ("SELECT test"), kept per call site: a tagged template's strings are one array per site. */
  names: WeakMap<readonly string[], string>;
  database: string;
}

function nameOf(statements: Statements, query: ExecutableQuery, text: string): string {
  let name = statements.names.get(query.strings);
  if (name === undefined) {
    name = `${operationOf(text)} ${statements.database}`;
    // A statement that opens with an interpolated fragment takes its first word from the fragment: not kept.
    if (/[A-Za-z]/.test(query.strings[0] ?? '')) statements.names.set(query.strings, name);
  }
  return name;
}

function instrument(statements: Statements, parent: RecordedSpan, query: ExecutableQuery): void {
  query.onexecute = () => {
    const span = parent.child('SQL', SpanKind.CLIENT, statements.attributes());
    return (error) => {
      // null: answered; anything else is what the query was rejected with.
      if (error !== null) {
        const code = (error as { code?: unknown } | undefined)?.code;
        // The code (a SQLSTATE, or the driver's own), never the message: PostgreSQL quotes input in some of its messages.
        span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? code : 'error' });
        if (typeof code === 'string') span.setAttribute('db.response.status_code', code);
        span.setAttribute('error.type', typeof code === 'string' ? code : 'Error');
      }
      const text = textOf(query);
      span.updateName(nameOf(statements, query, text));
      span.setAttribute('db.query.text', text);
      span.end();
    };
  };
}

export interface SqlTarget {
  database: string;
  /** Absent for several hosts (which one answers is the driver's choice) and for the embedded database. */
  server?: { address: string; port: number };
}

/**
 * `spanSql(parent)`: the pool `sql`, recording its statements under `parent`,
 * and those of the transactions it opens (sql.begin hands the work a
 * transaction client of its own, wrapped the same way). One per sampled request.
 */
export function sqlWithSpans(sql: Sql, target: SqlTarget): (parent: RecordedSpan) => Sql {
  const { database, server } = target;
  const statements: Statements = {
    attributes: server
      ? () => ({
          'db.system.name': 'postgresql',
          'db.namespace': database,
          'server.address': server.address,
          'server.port': server.port,
          'db.query.text': '',
        })
      : () => ({ 'db.system.name': 'postgresql', 'db.namespace': database, 'db.query.text': '' }),
    names: new WeakMap(),
    database,
  };
  const wrap = <T extends object>(client: T, parent: RecordedSpan): T =>
    new Proxy(client, {
      apply(fn, thisArg, args) {
        const result: unknown = Reflect.apply(fn as (...a: unknown[]) => unknown, thisArg, args);
        if (isQuery(result)) instrument(statements, parent, result);
        return result;
      },
      get(target, property) {
        const value: unknown = Reflect.get(target, property);
        if (typeof value !== 'function') return value;
        if (property === 'unsafe' || property === 'file') {
          return (...args: unknown[]) => {
            const result: unknown = Reflect.apply(value, target, args);
            if (isQuery(result)) instrument(statements, parent, result);
            return result;
          };
        }
        if (property === 'begin' || property === 'savepoint') {
          // begin(fn) or begin(mode, fn); savepoint(fn) or savepoint(name, fn): the work is the last argument.
          return (...args: unknown[]) => {
            const work = args.at(-1);
            if (typeof work === 'function') args[args.length - 1] = (tx: object) => (work as (tx: object) => unknown)(wrap(tx, parent));
            return Reflect.apply(value, target, args);
          };
        }
        return value;
      },
    });
  return (parent) => wrap(sql, parent);
}
