import { expect } from 'vitest';
import type { Client, Reply, TestApp } from './app.js';
import { uniq } from './names.js';

// Helpers for the /system/tenant-api suites. Everything goes through HTTP;
// only tenantRow() reads the raw table (to see logically deleted rows).
//
// Note: tests/support/app.ts createdId() turns the Location id into a JS
// number, which silently rounds a 19-digit snowflake id. Tenant ids are
// always handled as strings here (locationId()).

export const QUOTA_FIELDS = [
  'enterpriseQuery',
  'annualReportQuery',
  'chainReport',
  'businessReport',
  'riskReport',
  'merchant',
  'riskReportUsed',
  'zr',
  'credit',
  'pf',
] as const;

/** The allowances of quotaBo: limits per service period, -1 unlimited (docs/quotas.md); the other four are stored values. */
export const ALLOWANCES = QUOTA_FIELDS.slice(0, 6);
export const STORED_QUOTAS = QUOTA_FIELDS.slice(6);

export const RULE_FIELDS = ['modelZr', 'modelPf', 'modelEd', 'catalogZr', 'catalogPf', 'catalogEd', 'catalogRw'] as const;

export const ZERO_QUOTA = Object.fromEntries(QUOTA_FIELDS.map((f) => [f, 0])) as Record<(typeof QUOTA_FIELDS)[number], number>;
export const NULL_RULES = Object.fromEntries(RULE_FIELDS.map((f) => [f, null])) as Record<(typeof RULE_FIELDS)[number], string | null>;

export interface TenantDto {
  id: string;
  tenantId: string;
  tenantParent: string | null;
  tenantName: string;
  startTime: string | null;
  endTime: string | null;
  contactUserName: string;
  contactPhone: string;
  companyName: string;
  status: '0' | '1';
  accountCount: number;
  packageBo: { menuIds: string; packageId?: string };
  quotaBo: Record<(typeof QUOTA_FIELDS)[number], number>;
  ruleBo: Record<(typeof RULE_FIELDS)[number], string | null>;
  createBy: string;
  createTime: string;
  updateBy: string;
  updateTime: string | null;
}

/** Every key a TenantDTO read carries, sorted. */
export const DTO_KEYS = [
  'id',
  'tenantId',
  'tenantParent',
  'tenantName',
  'startTime',
  'endTime',
  'contactUserName',
  'contactPhone',
  'companyName',
  'status',
  'accountCount',
  'packageBo',
  'quotaBo',
  'ruleBo',
  'createBy',
  'createTime',
  'updateBy',
  'updateTime',
].sort();

export const PASSWORD = 'tenant-pass-1';

/** The four required fields, with a fresh companyName. */
export function tenantBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    tenantName: uniq('Tenant'),
    companyName: uniq('Company'),
    contactUserName: 'Zhang San',
    contactPhone: '13800138000',
    ...extra,
  };
}

/** The internal id (a string: 19 digits do not fit a double) from a create's Location header. */
export function locationId(reply: Reply): string {
  const location = String(reply.headers.location ?? '');
  const match = /^\/system\/tenant-api\/(\d+)$/.exec(location);
  if (reply.status !== 200 || !match) throw new Error(`tenant create failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return match[1]!;
}

export async function readTenant(as: Client, id: string): Promise<TenantDto> {
  const res = await as.get<TenantDto>(`/system/tenant-api/${id}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

/** POST, expect 200, then GET it back (as `reader`, default the creator). */
export async function createTenant(as: Client, extra: Record<string, unknown> = {}, reader: Client = as): Promise<TenantDto> {
  const res = await as.post('/system/tenant-api', tenantBody(extra));
  return readTenant(reader, locationId(res));
}

export interface TenantWithAdmin {
  tenant: TenantDto;
  /** The tenant's code, tenant.tenantId. */
  tenantId: string;
  /** The root department the tenant was created with. */
  rootDeptId: number;
  /** The tenant's first admin, signed in. */
  admin: Client;
  username: string;
  password: string;
}

/**
 * A tenant made by `as` (the superadmin unless told; an admin's tenant hangs
 * under the admin's own) with a first admin of a name of its own (so an actor
 * recorded as it is told apart from the superadmin, also called admin), that
 * admin signed in, and its root department. `extra` adds to or replaces the
 * create body's fields (username and password included).
 */
export async function createTenantWithAdmin(t: TestApp, as: Client = t.root, extra: Record<string, unknown> = {}): Promise<TenantWithAdmin> {
  // No underscore or percent sign: the audit list's tests search for them as literal text in user names.
  const body = { username: `adm${Math.random().toString(36).slice(2, 10)}`, password: PASSWORD, ...extra };
  const username = String(body.username);
  const password = String(body.password);
  const tenant = await createTenant(as, body, t.root);
  const admin = await t.login(tenant.tenantId, username, password);
  const depts = await admin.get('/system/dept-api/list?parentId=0');
  expect(depts.status, JSON.stringify(depts.body)).toBe(200);
  return { tenant, tenantId: tenant.tenantId, rootDeptId: depts.body.data[0].deptId as number, admin, username, password };
}

/** The DTO's writable part, as a PUT body (audit fields left out). */
export function writable(dto: TenantDto): Record<string, unknown> {
  const { createBy: _cb, createTime: _ct, updateBy: _ub, updateTime: _ut, ...rest } = dto;
  return structuredClone(rest);
}

/** The raw row, deleted or not. */
export async function tenantRow(t: TestApp, id: string) {
  const [row] = await t.sql<{ tenantId: string; delFlag: string; status: string; updateBy: string }[]>`
    SELECT tenant_id AS "tenantId", del_flag AS "delFlag", status, update_by AS "updateBy" FROM sys_tenant WHERE id = ${id}::bigint`;
  return row;
}

export async function listTotal(as: Client, query = ''): Promise<number> {
  const res = await as.get(`/system/tenant-api/list?pageSize=1${query}`);
  expect(res.status).toBe(200);
  return res.body.data.total;
}

/** Local calendar date `days` from today, YYYY-MM-DD (the service uses the process time zone too). */
export function dayFromToday(days: number): string {
  const d = new Date();
  d.setDate(d.getDate() + days);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}
