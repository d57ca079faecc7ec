import { Type } from '@sinclair/typebox';
import { Nullable, Status } from '../core/common.schema.js';
import { BODY_LIMIT_BYTES } from '../core/limits.js';
import { AUDIT_FIELDS, field } from '../db/fields.js';

// A package's fields, once: API name, column of sys_package, schema.
// package.schema.ts builds the schemas from this list and package.sql.ts its
// SELECT list and row mapping.

/** A package's id: snowflake-style, 19 digits, kept as text (beyond a JS number). */
export const PackageId = Type.String({ pattern: '^[0-9]{1,19}$', description: 'The package id (19 digits; an imported one keeps its value)' });

/** A menu list, as a package and a tenant's packageBo both take it. */
export const MenuIds = Type.String({
  // Bounded by the 1 MiB body limit, not tighter: 10,000 ids of up to 19
  // digits written "1, 2, 3" (spaces allowed) exceed 200,000 characters; the
  // 10,000-id limit is checked in normaliseMenuIds.
  maxLength: BODY_LIMIT_BYTES,
  description: 'Positive integers separated by commas, spaces allowed; returned normalised ("1,2,3", duplicates dropped, order kept)',
});

export const PACKAGE_FIELDS = {
  packageId: field('package_id', PackageId, { asText: true }),
  packageName: field(
    'package_name',
    Type.String({ minLength: 1, maxLength: 100, pattern: '\\S', description: 'Trimmed; unique among live packages' }),
  ),
  menuIds: field('menu_ids', MenuIds),
  remark: field('remark', Nullable(Type.String({ maxLength: 500 }))),
  status: field(
    'status',
    Type.Union(Status.anyOf, { description: '"0" open to tenants, "1" disabled: kept by the tenants on it, taken by no other' }),
  ),
  ...AUDIT_FIELDS,
};
