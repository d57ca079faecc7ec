import { Type, type Static } from '@sinclair/typebox';
import { PageOf, PageParams, Status } from '../core/common.schema.js';
import { MAX_PATH_PARAM } from '../core/limits.js';
import { propertiesOf } from '../db/fields.js';
import { PACKAGE_FIELDS } from './package.fields.js';

// Packages (docs/api-rules.md#packages): one schema for a package as read,
// from its field list; the create and update bodies derive from it.

export const Package = Type.Object(propertiesOf(PACKAGE_FIELDS), { $id: 'Package' });

const { packageName, menuIds, remark, status } = Package.properties;

/** POST body: a new package; menuIds default "", remark null, status "0". */
export const PackageCreate = Type.Object(
  { packageName, menuIds: Type.Optional(menuIds), remark: Type.Optional(remark), status: Type.Optional(status) },
  { $id: 'PackageCreate', examples: [{ packageName: 'Standard', menuIds: '1,2,3', remark: null, status: '0' }] },
);

/** PUT body: the full package, a replacement: omitted fields return to their defaults; the fields the server keeps (createBy...) may be sent back and are ignored. */
export const PackageUpdate = Type.Object(
  {
    packageId: Package.properties.packageId,
    packageName,
    menuIds: Type.Optional(menuIds),
    remark: Type.Optional(remark),
    status: Type.Optional(status),
  },
  { $id: 'PackageUpdate' },
);

export const PackageListQuery = Type.Object({
  packageName: Type.Optional(Type.String({ maxLength: 100, description: 'Substring match' })),
  status: Type.Optional(Status),
  ...PageParams,
});

export const PackageIdParam = Type.Object({ packageId: Type.String({ pattern: '^[0-9]{1,19}$', description: 'The package id' }) });

export const PackageIdsParam = Type.Object({
  packageIds: Type.String({
    pattern: '^[0-9]{1,19}(,[0-9]{1,19})*$',
    maxLength: MAX_PATH_PARAM,
    description: 'One package id or several, comma-separated',
  }),
});

export const PackagePage = PageOf(Type.Ref('Package'), { $id: 'PackagePage' });

export type Package = Static<typeof Package>;
export type PackageCreate = Static<typeof PackageCreate>;
export type PackageUpdate = Static<typeof PackageUpdate>;
export type PackageListQuery = Static<typeof PackageListQuery>;
