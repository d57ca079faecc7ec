import { Type, type Static } from '@sinclair/typebox';
import { Audit, BoundedPageOf, Nullable, PageParams, RefTo, Status, TenantCode } from '../core/common.schema.js';
import { USER_NAME_MAX } from '../core/limits.js';
import { propertiesOf } from '../db/fields.js';
import { PACKAGE_CHOICE_FIELDS, QUOTA_FIELDS, RULE_FIELDS, TENANT_FIELDS } from './tenant.fields.js';

export const PackageBo = Type.Object(propertiesOf(PACKAGE_CHOICE_FIELDS), { $id: 'PackageBo' });
/** packageBo as written: a packageId (menuIds then left out, or the package's), or menuIds of the tenant's own. */
export const PackageBoWrite = Type.Object(
  {
    menuIds: Type.Optional(PackageBo.properties.menuIds),
    packageId: Type.Optional(
      Nullable(
        Type.String({
          pattern: '^[0-9]{1,19}$',
          description: 'A live package open to tenants, or the one the tenant is already on; null or absent: menuIds of its own',
        }),
      ),
    ),
  },
  { $id: 'PackageBoWrite' },
);
export const QuotaBo = Type.Object(propertiesOf(QUOTA_FIELDS), { $id: 'QuotaBo' });
export const RuleBo = Type.Object(propertiesOf(RULE_FIELDS), { $id: 'RuleBo' });

/** TenantDTO as read: every field, with packageBo, quotaBo and ruleBo always present. */
export const Tenant = Type.Object(
  {
    ...propertiesOf(TENANT_FIELDS),
    packageBo: RefTo(PackageBo),
    quotaBo: RefTo(QuotaBo),
    ruleBo: RefTo(RuleBo),
    ...Audit.properties,
  },
  { $id: 'Tenant' },
);

// Fields a write may carry besides the four required ones; omitted ones
// take their defaults (tenant.fields.ts), which is what makes PUT a full replacement.
const optional = Type.Object({
  startTime: Type.Optional(Tenant.properties.startTime),
  endTime: Type.Optional(Tenant.properties.endTime),
  status: Type.Optional(Tenant.properties.status),
  accountCount: Type.Optional(Tenant.properties.accountCount),
  packageBo: Type.Optional(Nullable(RefTo(PackageBoWrite))),
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
      tenantParent: Type.Optional(TenantCode()),
      username: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: USER_NAME_MAX,
          pattern: '^\\S+$',
          writeOnly: true,
          description: "Write-only: the new tenant's admin",
        }),
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
    Type.Object({ tenantId: Type.Optional(TenantCode()), tenantParent: Type.Optional(Nullable(TenantCode())) }),
  ],
  { $id: 'TenantUpdate' },
);

export const TenantListQuery = Type.Object({
  tenantName: Type.Optional(Type.String({ maxLength: 50, description: 'Substring match' })),
  status: Type.Optional(Status),
  tenantParent: Type.Optional(TenantCode()),
  after: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,19}$',
      description:
        "A tenant's id (the last row of the page before): only the tenants after it in the list's id order, paged by pageNum and pageSize from there",
    }),
  ),
  ...PageParams,
});

export const TenantPage = BoundedPageOf(Type.Ref('Tenant'), { $id: 'TenantPage' });

export type Tenant = Static<typeof Tenant>;
export type TenantCreate = Static<typeof TenantCreate>;
export type TenantUpdate = Static<typeof TenantUpdate>;
export type TenantListQuery = Static<typeof TenantListQuery>;
