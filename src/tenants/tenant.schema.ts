import { Type, type Static } from '@sinclair/typebox';
import { Audit, Nullable, RefTo, Status } from '../core/common.schema.js';
import { BODY_LIMIT_BYTES, INT4_MAX, NAME_MAX } from '../core/limits.js';

const Code = Type.String({ pattern: '^[0-9]{6}$', description: 'Six-digit business code' });
/** A real calendar date: 2025-02-30 is refused. */
const Day = Type.String({ format: 'date', pattern: '^(?!0000)\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD, year 0001 or later' });
const Quota = Type.Integer({ minimum: 0, maximum: INT4_MAX, description: 'Default 0' });
const Rule = Nullable(Type.String({ maxLength: 2000, description: 'null when not configured' }));
const NonBlank = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '\\S' });

export const PackageBo = Type.Object(
  {
    menuIds: Type.String({
      // Bounded by the 1 MiB body limit, not tighter: 10,000 ids of up to 19
      // digits written "1, 2, 3" (spaces allowed) exceed 200,000 characters and
      // were refused; the 10,000-id limit is checked in normaliseMenuIds.
      maxLength: BODY_LIMIT_BYTES,
      description: 'Positive integers separated by commas, spaces allowed; returned normalised ("1,2,3", duplicates dropped, order kept)',
    }),
  },
  { $id: 'PackageBo' },
);

export const QuotaBo = Type.Object(
  {
    enterpriseQuery: Quota,
    annualReportQuery: Quota,
    chainReport: Quota,
    businessReport: Quota,
    riskReport: Quota,
    merchant: Quota,
    riskReportUsed: Quota,
    zr: Quota,
    credit: Quota,
    pf: Quota,
  },
  { $id: 'QuotaBo' },
);

export const RuleBo = Type.Object(
  {
    modelZr: Rule,
    modelPf: Rule,
    modelEd: Rule,
    catalogZr: Rule,
    catalogPf: Rule,
    catalogEd: Rule,
    catalogRw: Rule,
  },
  { $id: 'RuleBo' },
);

/** TenantDTO as read: every field, with packageBo, quotaBo and ruleBo always present. */
export const Tenant = Type.Object(
  {
    id: Type.String({ pattern: '^[0-9]{19}$', description: 'Internal snowflake-style id; used in paths' }),
    tenantId: Code,
    tenantParent: Nullable(Code),
    tenantName: NonBlank(50),
    startTime: Nullable(Day),
    endTime: Nullable(Day),
    contactUserName: NonBlank(NAME_MAX),
    contactPhone: Type.String({ minLength: 1, maxLength: 20, pattern: '^[0-9 +-]*[0-9][0-9 +-]*$', description: 'Digits, spaces, + and -' }),
    companyName: NonBlank(100),
    status: Status,
    accountCount: Type.Integer({ minimum: -1, maximum: INT4_MAX, description: '-1 means unlimited' }),
    packageBo: RefTo(PackageBo),
    quotaBo: RefTo(QuotaBo),
    ruleBo: RefTo(RuleBo),
    ...Audit.properties,
  },
  { $id: 'Tenant' },
);

// Fields a write may carry besides the four required ones; omitted ones
// take their defaults, which is what makes PUT a full replacement.
const optional = Type.Object({
  startTime: Type.Optional(Tenant.properties.startTime),
  endTime: Type.Optional(Tenant.properties.endTime),
  status: Type.Optional(Status),
  accountCount: Type.Optional(Tenant.properties.accountCount),
  packageBo: Type.Optional(Nullable(RefTo(PackageBo))),
  quotaBo: Type.Optional(Nullable(Type.Partial(QuotaBo))),
  ruleBo: Type.Optional(Nullable(Type.Partial(RuleBo))),
});
const required = Type.Pick(Tenant, ['tenantName', 'companyName', 'contactUserName', 'contactPhone']);

/** POST body: a child tenant. With username and password, its first admin is provisioned too. */
export const TenantCreate = Type.Composite(
  [
    required,
    optional,
    Type.Object({
      tenantParent: Type.Optional(Code),
      username: Type.Optional(
        Type.String({ minLength: 1, maxLength: NAME_MAX, pattern: '^\\S+$', writeOnly: true, description: "Write-only: the new tenant's admin" }),
      ),
      password: Type.Optional(Type.String({ minLength: 8, maxLength: 128, writeOnly: true, description: 'Write-only' })),
    }),
  ],
  {
    $id: 'TenantCreate',
    examples: [
      {
        tenantName: 'Acme',
        companyName: 'Acme Trading Ltd',
        contactUserName: 'Han Meimei',
        contactPhone: '+86 21 5555 0100',
        startTime: '2026-01-01',
        endTime: '2026-12-31',
        accountCount: 50,
        packageBo: { menuIds: '1,2,3' },
        username: 'acme-admin',
        password: 'a-long-secret',
      },
    ],
  },
);

/** PUT body: the full TenantDTO; tenantId and tenantParent may be repeated but never changed. */
export const TenantUpdate = Type.Composite(
  [
    Type.Object({ id: Type.String({ pattern: '^[0-9]{1,19}$' }) }),
    required,
    optional,
    Type.Object({ tenantId: Type.Optional(Code), tenantParent: Type.Optional(Nullable(Code)) }),
  ],
  { $id: 'TenantUpdate' },
);

export const TenantListQuery = Type.Object({
  tenantName: Type.Optional(Type.String({ maxLength: 50, description: 'Substring match' })),
  status: Type.Optional(Status),
  tenantParent: Type.Optional(Code),
  pageNum: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 }),
  pageSize: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
});

export const TenantPage = Type.Object(
  {
    total: Type.Integer(),
    rows: Type.Array(Type.Ref('Tenant')),
  },
  { $id: 'TenantPage' },
);

export type Tenant = Static<typeof Tenant>;
export type TenantCreate = Static<typeof TenantCreate>;
export type TenantUpdate = Static<typeof TenantUpdate>;
export type TenantListQuery = Static<typeof TenantListQuery>;
