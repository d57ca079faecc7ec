import { readdir, readFile } from 'node:fs/promises';
import postgres from 'postgres';
import { recordedStatements } from './statement-log.js';
import { DISTRIBUTED_TABLES, REFERENCE_TABLES } from '../../src/db/citus.js';

// The tenant-filter check (docs/scale-out.md#the-check): every statement the
// app sends that reads or writes a tenant-owned table must touch one tenant
// only, named by a parameter or a constant, so that with tenant_id as the
// distribution column each statement goes to one shard.
//
// A statement is judged by its generic plan, not its text: a text can name
// tenant_id in a column list, in an OR, or in a subquery that filters nothing.
// The plan shows every table the statement really scans (through views, CTEs
// and subqueries) with the conditions PostgreSQL applies to that scan, after
// it has propagated equalities (a.tenant_id = $1 AND b.tenant_id =
// a.tenant_id puts b.tenant_id = $1 on b's scan too). PostgreSQL 15 has no
// EXPLAIN (GENERIC_PLAN), so the statement is prepared and its EXECUTE
// explained with plan_cache_mode = force_generic_plan: the plan is then built
// without the parameter values (NULLs are passed only to fill the call), so
// it holds for every value, and conditions show parameters as $n.
//
// A scan of a tenant-owned table passes when one of the AND-ed conditions on
// it (its index condition, recheck condition or filter, or the condition of a
// join above it) is `alias.tenant_id = X`, where X is a parameter, a constant,
// or the tenant_id of another tenant-owned scan that passes (a join of rows
// of one tenant). An INSERT passes when the tenant_id it inserts is such an X.
// A condition under an OR, an `= ANY($1)` or a join to a reference table's
// tenant_id does not count: each could reach several tenants, or several
// shards under Citus. Anything the plan cannot show fails: a statement that
// cannot be prepared (several statements in one text, or one PREPARE does not
// take) unless it is transaction control, and a call of one of our own
// functions, whose statements a plan does not show.

/**
 * Tables with one row set per tenant, `tenant_id` leading their keys: the ones
 * the service distributes by tenant_id on Citus (src/db/citus.ts), so the
 * check and the cluster agree on what each table is.
 */
const TENANT_OWNED = DISTRIBUTED_TABLES;
/** Small or global tables, read-mostly: the reference tables on Citus, and the coordinator's own migrations table. */
const REFERENCE = [...REFERENCE_TABLES, 'schema_migrations'] as const;

/** Our functions a statement may call: they touch no tenant-owned table. Any other of ours fails the statement. */
const HARMLESS_FUNCTIONS: Record<string, string> = {
  next_snowflake_id: 'reads a sequence only',
};

/** A statement that reaches across tenants on purpose, and why. */
export interface Allowed {
  /** Matched against the statement text with each run of white space made one space. */
  statement: RegExp;
  /**
   * The tenant-owned tables it may scan, or insert into, without one tenant named. Any other
   * problem still fails it, so a join added later to an allowed statement is
   * judged like any other. Left out only for a statement that cannot be
   * judged at all (DDL, a function call).
   */
  unpinned?: string[];
  reason: string;
}

/** Whether `entry` allows `text` with these problems. */
function allows(entry: Allowed, text: string, problems: string[]): boolean {
  if (!entry.statement.test(text.replace(/\s+/g, ' ').trim())) return false;
  const tables = entry.unpinned;
  return (
    tables === undefined || problems.every((p) => tables.some((table) => p.startsWith(`scan of ${table} `) || p.startsWith(`INSERT INTO ${table} `)))
  );
}

export interface Verdict {
  text: string;
  /** Why the statement fails; empty when it passes. */
  problems: string[];
  /** The allowlist entry's reason, when the statement fails but is allowed. */
  allowedBecause?: string;
}

/** Statements that run no query: transaction control and session settings. */
const CONTROL = /^\s*(BEGIN|START TRANSACTION|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|SET|RESET|SHOW|LISTEN|UNLISTEN|DEALLOCATE)\b[^;]*;?\s*$/i;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Schema?: string;
  Alias?: string;
  Operation?: string;
  Output?: string[];
  Plans?: PlanNode[];
  [key: string]: unknown;
}

const CONDITIONS = ['Index Cond', 'Recheck Cond', 'Filter', 'TID Cond'];
const JOIN_CONDITIONS = ['Hash Cond', 'Merge Cond', 'Join Filter'];

/** Skips a quoted literal or identifier starting at i; returns the index after it. */
function skipQuoted(text: string, i: number): number {
  const quote = text[i]!;
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === quote) {
      if (text[j + 1] === quote) j++;
      else return j + 1;
    }
  }
  return text.length;
}

/**
 * Walks `text` outside quoted literals and identifiers, calling `visit` with
 * each position and the parenthesis depth before that character; `visit`
 * returning false stops the walk.
 */
function walkUnquoted(text: string, visit: (i: number, depth: number) => boolean | void): void {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      i = skipQuoted(text, i) - 1;
      continue;
    }
    if (visit(i, depth) === false) return;
    if (c === '(') depth++;
    else if (c === ')') depth--;
  }
}

/** Whether the whole of `text` is one parenthesised group. */
function wrapped(text: string): boolean {
  if (!text.startsWith('(') || !text.endsWith(')')) return false;
  let whole = true;
  // The group opened at 0 closes where the depth before a ')' is 1; anywhere but the end, it is not one group.
  walkUnquoted(text, (i, depth) => {
    if (text[i] === ')' && depth === 1 && i < text.length - 1) whole = false;
    return whole;
  });
  return whole;
}

/** The top-level AND-ed parts of a deparsed condition; an OR or NOT stays one part. */
export function conjuncts(condition: string): string[] {
  let text = condition.trim();
  while (wrapped(text)) text = text.slice(1, -1).trim();
  const parts: string[] = [];
  let start = 0;
  walkUnquoted(text, (i, depth) => {
    if (depth === 0 && text.startsWith(' AND ', i)) {
      parts.push(text.slice(start, i));
      start = i + 5;
    }
  });
  parts.push(text.slice(start));
  return parts.length === 1 ? [text] : parts.flatMap(conjuncts);
}

const VALUE = /^(\(?\$\d+\)?|'(?:[^']|'')*')(::[a-z ]+)?$/;
const TENANT_COLUMN = /^("(?:[^"]|"")+"|[a-z_][a-z0-9_$]*)\.tenant_id$/;

/** `a.tenant_id = <side>` as [alias, side], either way round; undefined for any other condition. */
function tenantEquality(conjunct: string): [string, string][] {
  const match = /^(.+?) = (.+)$/.exec(conjunct.trim());
  if (!match) return [];
  const [left, right] = [match[1]!.trim(), match[2]!.trim()];
  const out: [string, string][] = [];
  const l = TENANT_COLUMN.exec(left);
  const r = TENANT_COLUMN.exec(right);
  if (l) out.push([l[1]!, right]);
  if (r) out.push([r[1]!, left]);
  return out;
}

interface Scan {
  relation: string;
  alias: string;
  conditions: string[];
}

/** Every scan of a table in the plan, each with its own conditions and those of the joins above it. */
function scansOf(node: PlanNode, above: string[], out: Scan[], inserts: { relation: string; output: string[] | undefined }[]): void {
  const own = CONDITIONS.map((k) => node[k]).filter((c): c is string => typeof c === 'string');
  const joins = JOIN_CONDITIONS.map((k) => node[k]).filter((c): c is string => typeof c === 'string');
  if (node['Node Type'] === 'ModifyTable' && node.Operation === 'Insert') {
    inserts.push({ relation: node['Relation Name']!, output: node.Plans?.[0]?.Output });
  } else if (node['Relation Name'] !== undefined && node['Node Type'] !== 'ModifyTable' && node.Schema === 'public') {
    // Only our tables: the system catalogs (postgres.js reads pg_type once per connection) are every node's own.
    out.push({ relation: node['Relation Name'], alias: node.Alias ?? node['Relation Name'], conditions: [...own, ...above] });
  }
  for (const child of node.Plans ?? []) scansOf(child, [...above, ...joins, ...own], out, inserts);
}

const unquote = (alias: string) => (alias.startsWith('"') ? alias.slice(1, -1).replace(/""/g, '"') : alias);

/** Problems of one plan: scans and inserts of tenant-owned tables not pinned to one tenant. */
function planProblems(plan: PlanNode, tenantColumn: Map<string, number>): string[] {
  const scans: Scan[] = [];
  const inserts: { relation: string; output: string[] | undefined }[] = [];
  scansOf(plan, [], scans, inserts);
  // PostgreSQL 15 shows the value an InitPlan computes as $n too, numbered
  // apart from the statement's own parameters, so the two can look alike.
  // Such a value is found by a query of its own when the statement runs, not
  // known when it is planned, so Citus could not route by it: a $n that any
  // InitPlan of this plan returns never counts as one value.
  const computed = new Set([...JSON.stringify(plan).matchAll(/InitPlan \d+ \(returns ([^)]*)\)/g)].flatMap((m) => m[1]!.split(',')));
  const owned = new Set<string>(TENANT_OWNED);
  const problems: string[] = [];
  for (const scan of scans) {
    if (!owned.has(scan.relation) && !(REFERENCE as readonly string[]).includes(scan.relation)) {
      problems.push(`${scan.relation} is neither tenant-owned nor a reference table (tests/support/tenant-statements.ts)`);
    }
  }
  const tenantScans = scans.filter((s) => owned.has(s.relation));
  // An alias is pinned when every scan under that alias is: an alias used twice (a recursive walk) must hold for both.
  const pinned = new Set<string>();
  const pins = (side: string) =>
    (VALUE.test(side) && !computed.has(/\$\d+/.exec(side)?.[0] ?? '')) ||
    (TENANT_COLUMN.test(side) && pinned.has(unquote(TENANT_COLUMN.exec(side)![1]!)));
  const scanPinned = (scan: Scan) =>
    scan.conditions.some((c) =>
      conjuncts(c).some((part) => tenantEquality(part).some(([alias, side]) => unquote(alias) === scan.alias && pins(side))),
    );
  for (let changed = true; changed;) {
    changed = false;
    for (const alias of new Set(tenantScans.map((s) => s.alias))) {
      if (!pinned.has(alias) && tenantScans.filter((s) => s.alias === alias).every(scanPinned)) {
        pinned.add(alias);
        changed = true;
      }
    }
  }
  for (const scan of tenantScans) {
    if (!pinned.has(scan.alias)) {
      problems.push(`scan of ${scan.relation} ${scan.alias} without tenant_id = one value: ${scan.conditions.join(' / ') || 'no condition'}`);
    }
  }
  for (const insert of inserts) {
    if (!owned.has(insert.relation)) continue;
    const attnum = tenantColumn.get(insert.relation)!;
    const value = insert.output?.[attnum - 1];
    if (value === undefined || !pins(value)) problems.push(`INSERT INTO ${insert.relation} with tenant_id ${value ?? '(not shown)'}, not one value`);
  }
  return problems;
}

/** The highest $n in a statement text: how many parameters EXECUTE must pass. */
function parameterCount(text: string): number {
  return Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
}

/**
 * Judges each statement on `sql`, a database migrated as the app's (the run's
 * template): prepares it, explains its generic plan and walks it.
 */
export async function judgeStatements(sql: postgres.Sql, texts: readonly string[], allowlist: readonly Allowed[]): Promise<Verdict[]> {
  const connection = await sql.reserve();
  try {
    const columns = await connection<{ relname: string; attnum: number }[]>`
      SELECT c.relname, a.attnum FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE c.relname IN ${connection(TENANT_OWNED as unknown as string[])} AND a.attname = 'tenant_id' AND c.relnamespace = 'public'::regnamespace`;
    const tenantColumn = new Map(columns.map((c) => [c.relname, c.attnum]));
    const functions = (await connection<{ proname: string }[]>`SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace`)
      .map((f) => f.proname)
      .filter((name) => !(name in HARMLESS_FUNCTIONS));
    await connection`SET plan_cache_mode = force_generic_plan`;
    const verdicts: Verdict[] = [];
    for (const text of texts) {
      const problems = await judgeOne(connection, text, tenantColumn, functions);
      const allowed = problems.length > 0 ? allowlist.find((a) => allows(a, text, problems)) : undefined;
      verdicts.push({ text, problems, ...(allowed ? { allowedBecause: allowed.reason } : {}) });
    }
    return verdicts;
  } finally {
    connection.release();
  }
}

async function judgeOne(connection: postgres.ReservedSql, text: string, tenantColumn: Map<string, number>, functions: string[]): Promise<string[]> {
  if (CONTROL.test(text)) return [];
  const problems = functions
    .filter((name) => new RegExp(`\\b${name}\\s*"?\\s*\\(`, 'i').test(text))
    .map((name) => `calls ${name}(), whose own statements a plan does not show`);
  // The text is never run: the extended protocol (simple: false) refuses a
  // second statement hidden after a semicolon instead of running it, and a
  // read-only transaction, rolled back, holds the PREPARE and the EXPLAIN
  // (which without ANALYZE plans a write but does not execute it).
  const run = (statement: string) => connection.unsafe(statement, [], { simple: false } as object);
  await connection.unsafe('BEGIN READ ONLY');
  let prepared = false;
  try {
    await run(`PREPARE judged AS ${text}`);
    prepared = true;
    const n = parameterCount(text);
    const args = n === 0 ? '' : `(${Array(n).fill('NULL').join(', ')})`;
    const [row] = await run(`EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE judged${args}`);
    const [explained] = (row as unknown as { 'QUERY PLAN': { Plan: PlanNode }[] })['QUERY PLAN'];
    return [...problems, ...planProblems(explained!.Plan, tenantColumn)];
  } catch (err) {
    return [...problems, `cannot be ${prepared ? 'explained' : 'prepared'}, so cannot be judged: ${(err as Error).message}`];
  } finally {
    await connection.unsafe('ROLLBACK');
    // A prepared statement outlives the transaction.
    if (prepared) await connection.unsafe('DEALLOCATE judged');
  }
}

/** The scope rule's subtree of tenants (src/identity/scope.ts inTenantSubtree), as the statement text reads. */
const SUBTREE =
  '"s"\\.tenant_id = ANY \\(ARRAY\\( WITH RECURSIVE subtree \\(tenant_id\\) AS \\( SELECT \\$\\d+::text UNION ALL ' +
  'SELECT c\\.tenant_id FROM sys_tenant c JOIN subtree p ON c\\.tenant_parent = p\\.tenant_id\\) SELECT tenant_id FROM subtree\\)\\)';

/**
 * Statements that reach across tenants by design: each runs on the
 * coordinator under Citus as a multi-shard query (docs/scale-out.md).
 */
export const ALLOWLIST: readonly Allowed[] = [
  {
    statement:
      /^(SELECT EXISTS \(SELECT 1 FROM audit_log WHERE position IS NULL\) OR \(SELECT assigned_position|SELECT tenant_id AS "tenantId", seq::text AS seq FROM audit_log WHERE position IS NULL ORDER BY seq LIMIT|WITH placed AS \( UPDATE audit_log a SET position = v\.position FROM unnest\(|WITH todo AS \( SELECT tenant_id, seq, row_number\(\) OVER \(ORDER BY seq\) AS n FROM audit_log WHERE position IS NULL)/,
    unpinned: ['audit_log'],
    reason:
      "the audit sequencer (src/audit/audit.sequencer.ts assignPositions): one feed order over all tenants, so it numbers every tenant's new records",
  },
  {
    statement:
      /^WITH gone AS \( DELETE FROM audit_log WHERE \(tenant_id, seq\) IN \( SELECT tenant_id, seq FROM audit_log WHERE time < now\(\) - make_interval\(days => \$1\) AND position IS NOT NULL/,
    unpinned: ['audit_log'],
    reason: "the audit retention purge (src/audit/audit.sql.ts purgeAudit): deletes every tenant's records past their age",
  },
  {
    statement:
      /^INSERT INTO audit_newest \(position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, request_id, ip, changes\) SELECT position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, request_id, ip, changes FROM audit_log WHERE position IS NOT NULL ORDER BY position DESC LIMIT/,
    unpinned: ['audit_log'],
    reason:
      "the same purge, when it deleted some of the newest records: the copy of the newest (src/audit/audit.newest.ts) filled again from every tenant's",
  },
  {
    statement: /^SELECT DISTINCT \(a\.position \/ \$1\)::text AS block FROM audit_log a WHERE a\.position >= /,
    unpinned: ['audit_log'],
    reason: "the same purge's end: which old position blocks of the time window still hold a record, whichever tenants' records they hold",
  },
  {
    statement:
      /^WITH before AS \( SELECT t\.id, t\.menu_ids FROM sys_tenant t WHERE t\.package_id = \$1::bigint AND t\.del_flag = '0' AND t\.menu_ids <> \$2 FOR UPDATE\), reached AS \( UPDATE sys_tenant t SET menu_ids = \$3/,
    unpinned: ['audit_log'],
    reason:
      "a package's menu change reaching every live tenant on it (src/packages/package.rules.ts menusReachTenants): one statement for all of them, each tenant.menus record in the trail of the tenant it names",
  },
  {
    statement:
      /^DELETE FROM quota_idempotency WHERE \(tenant_id, idem_key\) IN \( SELECT k\.tenant_id, k\.idem_key FROM sys_tenant t CROSS JOIN LATERAL \( SELECT q\.tenant_id, q\.idem_key FROM quota_idempotency q WHERE q\.tenant_id = t\.tenant_id AND q\.create_time < now\(\) - make_interval\(days => \$1\)/,
    unpinned: ['quota_idempotency'],
    reason:
      "the purge of old Idempotency-Keys (src/quotas/quota.idempotency.ts purgeKeys): drops every tenant's keys past their age, probing each tenant's own index",
  },
  {
    statement:
      /^DELETE FROM login_lock WHERE \(tenant_id, user_name\) IN \( SELECT tenant_id, user_name FROM login_lock WHERE window_start <= now\(\) - make_interval\(mins => \$1\)/,
    unpinned: ['login_lock'],
    reason: "the purge of expired login locks (src/auth/auth.sql.ts): clears every tenant's stale counters by age",
  },
  {
    statement: new RegExp(
      `(FROM audit_log a WHERE a\\.position IS NOT NULL|\\(SELECT s\\.tenant_id FROM sys_tenant s WHERE ${SUBTREE}\\) v CROSS JOIN LATERAL \\( SELECT a\\.\\* FROM audit_log a WHERE a\\.tenant_id = v\\.tenant_id AND a\\.position IS NOT NULL)`,
    ),
    unpinned: ['audit_log'],
    reason:
      "the audit list, its count and the change feed of a superadmin (every tenant) or an admin (its tenant and those below, src/identity/scope.ts): reads several tenants' records by design",
  },
  {
    statement: new RegExp(
      `^UPDATE auth_session SET revoked_at = now\\(\\) WHERE revoked_at IS NULL AND tenant_id IN \\(SELECT s\\.tenant_id FROM sys_tenant s WHERE ${SUBTREE}\\)$`,
    ),
    unpinned: ['auth_session'],
    reason: 'ending the sessions of a disabled or deleted tenant and of every tenant below it (src/auth/auth.sql.ts): a subtree of tenants by design',
  },
  {
    statement: new RegExp(
      `^UPDATE sys_api_key SET revoke_time = now\\(\\), revoke_by = \\$1 WHERE revoke_time IS NULL AND tenant_id IN \\(SELECT s\\.tenant_id FROM sys_tenant s WHERE ${SUBTREE}\\)$`,
    ),
    unpinned: ['sys_api_key'],
    reason:
      'revoking the API keys of a disabled or deleted tenant and of every tenant below it (src/auth/auth.sql.ts): a subtree of tenants by design',
  },
  {
    statement:
      /^SELECT (count\(\*\) AS total|c\.connection_id AS "id", .*) FROM sso_connection c JOIN sys_tenant t ON t\.tenant_id = c\.tenant_id WHERE /,
    unpinned: ['sso_connection'],
    reason:
      'the SSO connection list of an admin (its tenant and those below, src/identity/scope.ts) or a superadmin (every tenant) without tenantId (src/sso/sso.sql.ts listConnections): what the caller manages, by design',
  },
  {
    statement:
      /^SELECT \(SELECT count\(\*\) FROM audit_log WHERE position IS NULL\) AS unsequenced, \(SELECT last_position FROM audit_feed WHERE id = 1\) AS last_position$/,
    unpinned: ['audit_log'],
    reason: "the audit feed's backlog for the metrics (src/audit/audit.sql.ts feedBacklog): the records of every tenant still waiting for a position",
  },
  {
    statement:
      /^UPDATE webhook_endpoint e SET lease_owner = \$1, lease_until = now\(\) \+ make_interval\(secs => \$2\) FROM \( SELECT c\.tenant_id, c\.endpoint_id FROM webhook_endpoint c /,
    unpinned: ['webhook_endpoint', 'audit_log'],
    reason:
      "the webhook workers' claim (src/webhooks/webhook.delivery.sql.ts claimDue): any node delivers for every tenant, so it looks for due endpoints of all",
  },
  {
    statement: /FROM audit_log a WHERE a\.position > \$\d+::bigint AND "a"\.position <= \$\d+::bigint AND \(\$\d+::text = \$\d+ OR /,
    unpinned: ['audit_log'],
    reason:
      "a webhook endpoint's pending records (src/webhooks/webhook.delivery.sql.ts pendingRecords): its tenant's and those below, like the audit list",
  },
  {
    statement:
      /^(UPDATE webhook_endpoint c SET cursor = f\.last_position FROM audit_feed f|SELECT c\.tenant_id AS "tenantId", c\.endpoint_id::int AS id(, c\.failures,|, c\.cursor::text AS cursor FROM webhook_endpoint c WHERE c\.status = '0' AND c\.cursor \+ 1 <)|^SELECT min\(position\)::text AS oldest FROM audit_log WHERE position IS NOT NULL$)/,
    unpinned: ['webhook_endpoint', 'audit_log'],
    reason:
      'webhook maintenance and metrics over every endpoint, and the oldest retained record (src/webhooks/webhook.maintenance.sql.ts catchUpIdle, expiredCursors, backlogs, oldestRetained; a replay starts no earlier than it, src/webhooks/webhook.sql.ts replayFrom)',
  },
  {
    statement:
      /^DELETE FROM webhook_delivery WHERE \(tenant_id, endpoint_id, delivery_id\) IN \( SELECT tenant_id, endpoint_id, delivery_id FROM webhook_delivery WHERE time < now\(\)/,
    unpinned: ['webhook_delivery'],
    reason: "the webhook attempt log's 7-day purge (src/webhooks/webhook.maintenance.sql.ts purgeDeliveries): every tenant's rows by age",
  },
  {
    statement: /^(CREATE TABLE IF NOT EXISTS schema_migrations \(|ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text$)/,
    reason: "the migrations' own bookkeeping at start-up (src/db/migrate.ts): DDL on a table of the coordinator",
  },
];

/** Tables of the schema missing from both lists, or tenant-owned without tenant_id: the lists must say what each table is. */
async function unclassifiedTables(sql: postgres.Sql): Promise<string[]> {
  const tables = await sql<{ name: string; tenantColumn: boolean }[]>`
    SELECT c.relname AS name, EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id') AS "tenantColumn"
    FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')`;
  const known = new Set<string>([...TENANT_OWNED, ...REFERENCE]);
  return [
    ...tables.filter((t) => !known.has(t.name)).map((t) => `table ${t.name} is neither distributed nor a reference table in src/db/citus.ts`),
    ...tables
      .filter((t) => (TENANT_OWNED as readonly string[]).includes(t.name) && !t.tenantColumn)
      .map((t) => `tenant-owned table ${t.name} has no tenant_id`),
    ...[...known].filter((name) => !tables.some((t) => t.name === name)).map((name) => `listed table ${name} does not exist`),
  ];
}

/**
 * The global teardown's step: judges every statement recorded in `dir`
 * against the template database `template` on `serverUrl`, prints the
 * result, and fails the run (exit code 1) when a statement fails unallowed.
 */
export async function checkTenantStatements(serverUrl: string, template: string, dir: string): Promise<void> {
  const started = Date.now();
  const url = new URL(serverUrl);
  url.pathname = `/${template}`;
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    // The migration files (sent whole by src/db/migrate.ts) are DDL and one-off data fixes, not the
    // app's statements: under Citus, DDL on a distributed table is propagated to its shards.
    const sqlDir = new URL('../../sql/', import.meta.url);
    const files = (await readdir(sqlDir)).filter((f) => f.endsWith('.sql'));
    const migrations = new Set(await Promise.all(files.map((f) => readFile(new URL(f, sqlDir), 'utf8'))));
    const texts = (await recordedStatements(dir)).filter((text) => !migrations.has(text));
    const schema = await unclassifiedTables(sql);
    const verdicts = await judgeStatements(sql, texts, ALLOWLIST);
    const failed = verdicts.filter((v) => v.problems.length > 0 && !v.allowedBecause);
    const allowed = verdicts.filter((v) => v.allowedBecause);
    const unused = ALLOWLIST.filter((a) => !allowed.some((v) => allows(a, v.text, v.problems)));
    const ms = Date.now() - started;
    console.log(
      `[tests] tenant filter: ${texts.length} distinct statements judged in ${ms} ms; ` +
        `${verdicts.length - failed.length - allowed.length} pass, ${allowed.length} allowed across tenants, ${failed.length} fail`,
    );
    // Expected when only some files ran; after a whole run, an entry that matched nothing may be stale.
    if (unused.length > 0) console.log(`[tests] tenant filter: ${unused.length} of ${ALLOWLIST.length} allowlist entries matched nothing this run`);
    if (failed.length > 0 || schema.length > 0) {
      process.exitCode = 1;
      for (const problem of schema) console.error(`[tests] tenant filter: ${problem}`);
      for (const v of failed) console.error(`[tests] tenant filter FAILS:\n${v.text.trim()}\n  - ${v.problems.join('\n  - ')}\n`);
      console.error('[tests] tenant filter: see docs/scale-out.md#the-check');
    }
  } finally {
    await sql.end();
  }
}
