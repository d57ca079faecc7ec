import { Type, type Static } from '@sinclair/typebox';
import { DelFlagInput, EntityIdQuery, Status, TenantCode } from '../core/common.schema.js';
import { USER_NAME_MAX } from '../core/limits.js';
import { propertiesOf } from '../db/fields.js';
import { AssignableRole, USER_FIELDS } from './user.fields.js';

/** A user as read (user.fields.ts). The password never appears here, so it can never be serialised. */
export const User = Type.Object(propertiesOf(USER_FIELDS), { $id: 'User' });

const Password = Type.String({ minLength: 8, maxLength: 128, writeOnly: true, description: 'Write-only; stored as a salted scrypt hash' });

const optional = Type.Object({
  deptId: Type.Optional(User.properties.deptId),
  nickName: Type.Optional(User.properties.nickName),
  email: Type.Optional(User.properties.email),
  phonenumber: Type.Optional(User.properties.phonenumber),
  status: Type.Optional(Status),
  delFlag: Type.Optional(DelFlagInput),
  tenantId: Type.Optional(TenantCode("Must be the caller's tenant when sent")),
});
const Roles = Type.Array(AssignableRole, { minItems: 1, maxItems: 1, description: '["admin"] or ["user"]' });

export const UserCreate = Type.Composite([Type.Pick(User, ['userName']), Type.Object({ roles: Roles, password: Password }), optional], {
  $id: 'UserCreate',
  examples: [{ userName: 'li.lei', nickName: 'Li Lei', password: 'a-long-secret', roles: ['user'], deptId: 101 }],
});

/** Full replacement; the password changes only when sent, and then every token of the user is revoked. */
export const UserUpdate = Type.Composite(
  [Type.Pick(User, ['userId', 'userName']), Type.Object({ roles: Roles, password: Type.Optional(Password) }), optional],
  { $id: 'UserUpdate' },
);

export const UserListQuery = Type.Object({
  deptId: Type.Optional(EntityIdQuery()),
  userName: Type.Optional(Type.String({ maxLength: USER_NAME_MAX, description: 'Substring match' })),
  status: Type.Optional(Status),
});

export type User = Static<typeof User>;
export type UserCreate = Static<typeof UserCreate>;
export type UserUpdate = Static<typeof UserUpdate>;
export type UserListQuery = Static<typeof UserListQuery>;
