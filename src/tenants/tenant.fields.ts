import { Type } from '@sinclair/typebox';
import { Day, Nullable, Status } from '../core/common.schema.js';
import { BODY_LIMIT_BYTES, CONTACT_NAME_MAX, INT4_MAX } from '../core/limits.js';
import { field } from '../db/fields.js';

// The tenant's fields, once: API name, column of sys_tenant, schema, write
// default. tenant.schema.ts builds the schemas from these lists and
// tenant.sql.ts its SELECT list, row mapping and write columns.

/** A tenant's code (`tenantId`, `tenantParent`), also sent by the create and update bodies. */
export const TenantCode = Type.String({ pattern: '^[0-9]{6}$', description: 'Six-digit business code' });
const Quota = Type.Integer({ minimum: 0, maximum: INT4_MAX, description: 'Default 0' });
const Rule = Nullable(Type.String({ maxLength: 2000, description: 'null when not configured' }));
const NonBlank = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '\\S' });
const required = { write: { required: true as const } };
const zero = { write: { default: 0 } };
const none = { write: { default: null } };

/** The top-level fields of a TenantDTO. */
export const TENANT_FIELDS = {
  id: field('id', Type.String({ pattern: '^[0-9]{19}$', description: 'Internal snowflake-style id; used in paths' }), { asText: true }),
  tenantId: field('tenant_id', TenantCode),
  tenantParent: field('tenant_parent', Nullable(TenantCode)),
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

/** packageBo: the menu package. */
export const PACKAGE_FIELDS = {
  menuIds: field(
    'menu_ids',
    Type.String({
      // Bounded by the 1 MiB body limit, not tighter: 10,000 ids of up to 19
      // digits written "1, 2, 3" (spaces allowed) exceed 200,000 characters and
      // were refused; the 10,000-id limit is checked in normaliseMenuIds.
      maxLength: BODY_LIMIT_BYTES,
      description: 'Positive integers separated by commas, spaces allowed; returned normalised ("1,2,3", duplicates dropped, order kept)',
    }),
    { write: { default: '' } },
  ),
};

/** quotaBo: the ten usage quotas. */
export const QUOTA_FIELDS = {
  enterpriseQuery: field('enterprise_query', Quota, zero),
  annualReportQuery: field('annual_report_query', Quota, zero),
  chainReport: field('chain_report', Quota, zero),
  businessReport: field('business_report', Quota, zero),
  riskReport: field('risk_report', Quota, zero),
  merchant: field('merchant', Quota, zero),
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
