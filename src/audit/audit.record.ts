import type postgres from 'postgres';
import type { Db } from '../db/database.js';
import type { Actor } from '../identity/caller.js';
import { builtOnce, plainName } from '../db/fields.js';

// The write side of the audit trail (docs/api-rules.md#audit-trail-and-change-feed). Each write path makes
// one call to recordAudit with the transaction that makes the change, so the
// record commits or rolls back with it: a refused write records nothing, and
// a record that cannot be written takes the change down with it.

export const ACTIONS = [
  'dept.create',
  'dept.update',
  'dept.move',
  'dept.delete',
  'user.create',
  'user.update',
  'user.delete',
  'user.password',
  'tenant.create',
  'tenant.update',
  'tenant.delete',
  'auth.login',
  'auth.login_failed',
  'auth.logout',
  'webhook.create',
  'webhook.update',
  'webhook.delete',
  'webhook.disabled',
  'apikey.create',
  'apikey.delete',
  'auth.sso',
  'sso.create',
  'sso.update',
  'sso.delete',
  'sso.policy',
  'sso.link',
  'sso.jit',
  'quota.threshold',
  'package.create',
  'package.update',
  'package.delete',
  'tenant.menus',
  'tenant.import',
  'dept.import',
] as const;
type AuditAction = (typeof ACTIONS)[number];
export const ENTITY_TYPES = ['dept', 'user', 'tenant', 'session', 'webhook', 'apikey', 'sso', 'quota', 'package'] as const;
type EntityType = (typeof ENTITY_TYPES)[number];

/** A row as `to_jsonb(row)` gives it: column names in snake_case. */
export type RowImage = Record<string, unknown>;
export type Changes = Record<string, unknown>;

export interface AuditEntry {
  action: AuditAction;
  entityType: EntityType;
  entityId: string | number;
  /** Whose data changed; defaults to the actor's tenant. */
  tenantId?: string;
  changes: Changes;
}

// Never in a record: secrets (whatever a future column is called), and the
// bookkeeping columns the record itself already says (who, when, deleted).
const OMITTED = new Set(['password_hash', 'del_flag', 'create_by', 'create_time', 'update_by', 'update_time']);
const SECRET = /password|hash|token|secret/i;

const camel = (column: string) => column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** A row's values under their API names, secrets and bookkeeping left out: `changes` of a create or delete. */
export function values(image: RowImage): Changes {
  const out: Changes = {};
  for (const [column, value] of Object.entries(image)) {
    if (!OMITTED.has(column) && !SECRET.test(column)) out[camel(column)] = value;
  }
  return out;
}

/** `{field: {before, after}}` of just the fields that differ: `changes` of an update or move. */
export function diff(before: RowImage, after: RowImage): Changes {
  const old = values(before);
  const out: Changes = {};
  for (const [field, value] of Object.entries(values(after))) {
    if (JSON.stringify(old[field]) !== JSON.stringify(value)) out[field] = { before: old[field] ?? null, after: value };
  }
  return out;
}

type Fragment = postgres.PendingQuery<postgres.Row[]>;

// values() and diff() as SQL, for records written in the change's own
// statement: the same rules, applied once to the table's column list (which
// columns are recorded, under which API names) instead of to every row's
// image. Walking `to_jsonb(row)` key by key in SQL (jsonb_each, a regular
// expression and initcap() per key) cost the database about ten times what
// naming the columns does, most of what a record added to a department write.
// A test holds both forms equal on real rows, so a column added to the table
// but not to its list fails it.
//
// The SQL is one piece of text per column list and alias, built once and
// reused (as selectList does): composed per write from a postgres.js
// fragment per column, a create made some 35 query objects, which under load
// lived long enough for V8 to move them to the old generation, and their
// collection cost creates more CPU than the record's SQL did. The text holds
// only names from the code's own lists, each checked by plainName.

type Recorded = ReadonlyArray<readonly [column: string, field: string]>;

/** Of a table's columns, those its records carry (values()'s rules), each with its API name. */
export function recordedColumns(columns: readonly string[]): Recorded {
  return columns
    .filter((column) => !OMITTED.has(column) && !SECRET.test(column))
    .map((column) => [plainName(column, 'identifier'), plainName(camel(column), 'apiName')] as const);
}

/** values() of the row `row` (a table alias), in SQL. */
export function valuesSql(db: Db, recorded: Recorded, row: string): Fragment {
  const r = plainName(row, 'identifier');
  return builtOnce(
    db,
    recorded,
    `values ${r}`,
    () => `jsonb_build_object(${recorded.map(([column, field]) => `'${field}', ${r}.${column}`).join(', ')})`,
  );
}

/**
 * diff() of the rows `before` and `after` (table aliases), in SQL: only the
 * columns whose values differ. Each column is compared as it is and built
 * into the object only when it changed: a `VALUES` row per column, each
 * value turned into jsonb and the rows aggregated, cost the database several
 * times as much (docs/benchmark.md#cost-of-the-audit-trail).
 */
export function diffSql(db: Db, recorded: Recorded, before: string, after: string): Fragment {
  const [b, a] = [plainName(before, 'identifier'), plainName(after, 'identifier')];
  return builtOnce(
    db,
    recorded,
    `diff ${b} ${a}`,
    () =>
      `('{}'::jsonb ${recorded
        .map(
          ([column, field]) =>
            `|| CASE WHEN ${b}.${column} IS DISTINCT FROM ${a}.${column} THEN jsonb_build_object('${field}', jsonb_build_object('before', ${b}.${column}, 'after', ${a}.${column})) ELSE '{}'::jsonb END`,
        )
        .join(' ')})`,
  );
}

/**
 * The record of a write as one more data-modifying CTE of the write's own
 * statement (`WITH changed AS (UPDATE ... RETURNING *) ${auditRecords(...)} SELECT ...`),
 * so it costs no round trip of its own. `source` is a query over the
 * statement's earlier CTEs giving one (entity_id, changes) row per record,
 * `changes` made by valuesSql() or diffSql(). The records are the actor's
 * tenant's.
 */
export function auditRecords(db: Db, actor: Actor, action: AuditAction, entityType: EntityType, source: Fragment) {
  return db`, audit_records AS (${auditRecordsStatement(db, actor, action, entityType, source)})`;
}

/**
 * auditRecords as a statement of its own, for a write that runs one
 * statement per table (createDept on Citus, which runs a statement whose
 * CTEs write as several, each CTE's rows kept on the coordinator in
 * between: docs/scale-out.md#what-it-costs). `source` reads the changed row
 * from the values the change's own statement returned.
 */
export function auditRecordsStatement(db: Db, actor: Actor, action: AuditAction, entityType: EntityType, source: Fragment) {
  return db`
    INSERT INTO audit_log (tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, request_id, ip, changes)
    SELECT ${actor.tenantId}, ${actor.userName}, ${actor.userTenantId ?? actor.tenantId}, ${action}, ${entityType},
           r.entity_id::text, ${actor.requestId ?? null}, ${actor.ip ?? null}, r.changes
    FROM (${source}) AS r(entity_id, changes)`;
}

/**
 * auditRecords for a change that reaches many tenants in one statement (a
 * package's menus reaching the tenants on it): `source` gives one
 * (tenant_id, entity_id, changes) row per record, each in the trail of the
 * tenant it names; the actor is who made the change.
 */
export function auditRecordsAcross(db: Db, actor: Actor, action: AuditAction, entityType: EntityType, source: Fragment) {
  return db`, audit_records AS (
    INSERT INTO audit_log (tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, request_id, ip, changes)
    SELECT r.tenant_id, ${actor.userName}, ${actor.userTenantId ?? actor.tenantId}, ${action}, ${entityType},
           r.entity_id::text, ${actor.requestId ?? null}, ${actor.ip ?? null}, r.changes
    FROM (${source}) AS r(tenant_id, entity_id, changes))`;
}

/** Writes the records of one change, in one statement per tenant whose data changed (in practice one), on `db` (the change's transaction). */
export async function recordAudit(db: Db, actor: Actor, entries: AuditEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const byTenant = new Map<string, AuditEntry[]>();
  for (const e of entries) {
    const tenantId = e.tenantId ?? actor.tenantId;
    byTenant.set(tenantId, [...(byTenant.get(tenantId) ?? []), e]);
  }
  for (const [tenantId, group] of byTenant) {
    const rows = group.map((e) => ({
      user_name: actor.userName,
      user_tenant_id: actor.userTenantId ?? actor.tenantId,
      action: e.action,
      entity_type: e.entityType,
      entity_id: String(e.entityId),
      request_id: actor.requestId ?? null,
      ip: actor.ip ?? null,
      changes: e.changes,
    }));
    // One JSON parameter, however many rows: a batch delete of 1000 is still one statement. The
    // tenant is a parameter of its own, so the statement writes one tenant's records and names
    // which (docs/scale-out.md#what-the-tables-become).
    await db`
      INSERT INTO audit_log (tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, request_id, ip, changes)
      SELECT ${tenantId}, r.user_name, r.user_tenant_id, r.action, r.entity_type, r.entity_id, r.request_id, r.ip, r.changes
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::text::jsonb) AS r(
        user_name text, user_tenant_id text, action text, entity_type text, entity_id text,
        request_id text, ip text, changes jsonb)`;
  }
}
