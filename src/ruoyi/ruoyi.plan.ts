import { createHash } from 'node:crypto';

// What an import brings in, in the service's own shape (docs/migrate-from-ruoyi.md):
// the rows to write, keyed as the target's columns, and the problems found
// on the way. Built by ruoyi.map.ts, checked by ruoyi.checks.ts and against
// the target by ruoyi.target.ts, written by ruoyi.write.ts.

export const PLATFORM = '000000';

export type Kind = 'package' | 'tenant' | 'dept' | 'user';
export const KINDS: readonly Kind[] = ['package', 'tenant', 'dept', 'user'];

/** A reason the source cannot be brought in as it is, named by its source table and id. */
export interface Problem {
  table: string;
  id: string;
  message: string;
}

export interface PackageRow {
  package_id: string;
  package_name: string;
  menu_ids: string;
  remark: string | null;
  status: string;
  create_time: Date | null;
  update_time: Date | null;
}

export interface TenantRow {
  id: string;
  tenant_id: string;
  tenant_name: string;
  company_name: string;
  contact_user_name: string;
  contact_phone: string;
  start_time: string | null;
  end_time: string | null;
  status: string;
  account_count: number;
  menu_ids: string;
  package_id: string | null;
  del_flag: string;
  create_time: Date | null;
  update_time: Date | null;
}

export interface DeptRow {
  tenant_id: string;
  dept_id: string;
  parent_id: string;
  ancestors: string;
  dept_name: string;
  order_num: number;
  leader: string | null;
  phone: string | null;
  email: string | null;
  status: string;
  del_flag: string;
  create_by: string;
  create_time: Date | null;
  update_by: string;
  update_time: Date | null;
}

export interface UserRow {
  tenant_id: string;
  user_id: string;
  dept_id: string | null;
  user_name: string;
  nick_name: string;
  email: string | null;
  phonenumber: string | null;
  status: string;
  del_flag: string;
  role: 'superadmin' | 'admin' | 'user';
  password_hash: string;
  create_by: string;
  create_time: Date | null;
  update_by: string;
  update_time: Date | null;
}

/** One row to write: its kind, tenant, source id, the row itself and its digest. */
export interface Planned<R> {
  kind: Kind;
  tenantId: string;
  sourceId: string;
  row: R;
  digest: string;
}

/** Whether a planned row is new to the target, changed in the source since the last run, or as it was. */
export type Outcome = 'imported' | 'updated' | 'unchanged';

export interface Plan {
  packages: Planned<PackageRow>[];
  tenants: Planned<TenantRow>[];
  depts: Planned<DeptRow>[];
  users: Planned<UserRow>[];
  /** Source rows left out on purpose (deleted packages), by kind. */
  skipped: Record<Kind, number>;
  /** Values the service has no place for, by source field: counted, not kept. */
  dropped: Record<string, number>;
  /** Departments whose stored ancestors disagreed with their parents: recomputed, reported as fixed. */
  fixedAncestors: string[];
  problems: Problem[];
}

/** A digest of a row as written: equal rows, equal digests, whatever the run. */
export function digestOf(row: object): string {
  // The values in the row's (fixed) column order: a row type's columns never change order.
  const values = Object.values(row).map((value: unknown) => (value instanceof Date ? value.toISOString() : value));
  return createHash('sha256').update(JSON.stringify(values)).digest('base64url');
}

export function planned<R extends object>(kind: Kind, tenantId: string, sourceId: string, row: R): Planned<R> {
  return { kind, tenantId, sourceId, row, digest: digestOf(row) };
}

/** RuoYi's '' (its seed's e-mails, phone numbers) is no value: null. */
export function optional(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const trimmed = value.trim();
  return trimmed === '' ? null : trimmed;
}

/** A RuoYi status or del flag in the service's form: '0' live/enabled, anything else the other. */
export const statusOf = (value: string | null) => (value?.trim() === '1' ? '1' : '0');
export const delFlagOf = (value: string | null) => (value === null || value.trim() === '0' ? '0' : '2');

/** A date of a time in the process time zone, as the service keeps tenants' periods. */
export function dayOf(time: Date | null): string | null {
  if (time === null) return null;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())}`;
}
