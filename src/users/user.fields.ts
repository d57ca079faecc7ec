import { Type } from '@sinclair/typebox';
import { DelFlag, EntityId, Nullable, Phone, Status } from '../core/common.schema.js';
import { EMAIL_MAX, NICK_NAME_MAX, USER_NAME_MAX } from '../core/limits.js';
import { AUDIT_FIELDS, field } from '../db/fields.js';

// The user's fields, once: API name, column of sys_user, schema, write
// default. user.schema.ts builds the schemas from this list and user.sql.ts
// its SELECT list, row mapping and write columns. The password is not here:
// it is write-only (user.schema.ts) and stored only as a hash.

export const AssignableRole = Type.Union([Type.Literal('admin'), Type.Literal('user')]);

export const USER_FIELDS = {
  userId: field('user_id', EntityId()),
  tenantId: field('tenant_id', Type.String()),
  deptId: field('dept_id', Nullable(EntityId()), { write: { default: null } }),
  userName: field(
    'user_name',
    Type.String({ minLength: 1, maxLength: USER_NAME_MAX, pattern: '^\\S+$', description: "Unique among the tenant's live users" }),
    { write: { required: true } },
  ),
  nickName: field('nick_name', Type.String({ maxLength: NICK_NAME_MAX }), { write: { default: '' } }),
  email: field('email', Nullable(Type.String({ maxLength: EMAIL_MAX, format: 'email' })), { write: { default: null } }),
  phonenumber: field('phonenumber', Nullable(Phone), { write: { default: null } }),
  status: field('status', Status, { write: { default: '0' } }),
  delFlag: field('del_flag', DelFlag),
  // One role per user, in the column `role`; the API shows RuoYi's list.
  roles: field('role', Type.Array(Type.Union([AssignableRole, Type.Literal('superadmin')]), { minItems: 1, maxItems: 1 }), {
    read: (role: string) => [role],
  }),
  ...AUDIT_FIELDS,
};
