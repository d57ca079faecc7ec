import { Type } from '@sinclair/typebox';
import { Day, Nullable, Status, TenantCode } from '../core/common.schema.js';
import { CONTACT_NAME_MAX, INT4_MAX } from '../core/limits.js';
import { field } from '../db/fields.js';
import { MenuIds, PackageId } from '../packages/package.fields.js';

// The tenant's fields, once: API name, column of sys_tenant, schema, write
// default. tenant.schema.ts builds the schemas from these lists and
// tenant.sql.ts its SELECT list, row mapping and write columns.

const Quota = Type.Integer({ minimum: 0, maximum: INT4_MAX, description: 'Default 0' });
/** An allowance the services consume in each service period (docs/quotas.md). */
const Allowance = Type.Integer({ minimum: -1, maximum: INT4_MAX, description: 'Limit per service period: -1 unlimited, 0 none; default 0' });
const Rule = Nullable(Type.String({ maxLength: 2000, description: 'null when not configured' }));
const NonBlank = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '\\S' });
const required = { write: { required: true as const } };
const zero = { write: { default: 0 } };
const none = { write: { default: null } };

/** The top-level fields of a TenantDTO. */
export const TENANT_FIELDS = {
  id: field(
    'id',
    Type.String({ pattern: '^[0-9]{1,19}$', description: 'Internal snowflake-style id (19 digits; an imported one keeps its value); used in paths' }),
    { asText: true },
  ),
  tenantId: field('tenant_id', TenantCode()),
  tenantParent: field('tenant_parent', Nullable(TenantCode())),
  tenantName: field('tenant_name', NonBlank(50), required),
  startTime: field('start_time', Nullable(Day), { asText: true, ...none }),
  endTime: field('end_time', Nullable(Day), { asText: true, ...none }),
  contactUserName: field('contact_user_name', NonBlank(CONTACT_NAME_MAX), required),
  contactPhone: field(
    'contact_phone',
    Type.String({ minLength: 1, maxLength: 20, pattern: '^[0-9 +-]*[0-9][0-9 +-]*$', description: 'Digits, spaces, + and -' }),
    required,
  ),
  companyName: field('company_name', NonBlank(100), required),
  status: field('status', Status, { write: { default: '0' } }),
  accountCount: field('account_count', Type.Integer({ minimum: -1, maximum: INT4_MAX, description: '-1 means unlimited' }), {
    write: { default: -1 },
  }),
};

/**
 * packageBo: the tenant's choice of menus: a package the platform keeps
 * (packageId; the package's own fields are PACKAGE_FIELDS, src/packages/)
 * or a menu list of the tenant's own.
 */
export const PACKAGE_CHOICE_FIELDS = {
  menuIds: field('menu_ids', MenuIds, { write: { default: '' } }),
  packageId: field(
    'package_id',
    Type.Optional(
      Type.String({
        pattern: PackageId.pattern,
        description: "The package the tenant is on; menuIds are then the package's. Absent when the tenant keeps its own menus",
      }),
    ),
    // Absent, not null, for a tenant without a package: its packageBo reads as before packages existed.
    { asText: true, read: (value: string | null) => value ?? undefined, write: { default: null } },
  ),
};

/** quotaBo: the ten usage quotas; the first six are the allowances consumed at /system/quota-api (src/quotas/), the other four stored values. */
export const QUOTA_FIELDS = {
  enterpriseQuery: field('enterprise_query', Allowance, zero),
  annualReportQuery: field('annual_report_query', Allowance, zero),
  chainReport: field('chain_report', Allowance, zero),
  businessReport: field('business_report', Allowance, zero),
  riskReport: field('risk_report', Allowance, zero),
  merchant: field('merchant', Allowance, zero),
  riskReportUsed: field('risk_report_used', Quota, zero),
  zr: field('zr', Quota, zero),
  credit: field('credit', Quota, zero),
  pf: field('pf', Quota, zero),
};

/** ruleBo: the seven rule settings. */
export const RULE_FIELDS = {
  modelZr: field('model_zr', Rule, none),
  modelPf: field('model_pf', Rule, none),
  modelEd: field('model_ed', Rule, none),
  catalogZr: field('catalog_zr', Rule, none),
  catalogPf: field('catalog_pf', Rule, none),
  catalogEd: field('catalog_ed', Rule, none),
  catalogRw: field('catalog_rw', Rule, none),
};
