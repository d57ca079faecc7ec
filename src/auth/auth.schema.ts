import { Type } from '@sinclair/typebox';
import { EntityId, Nullable, TenantCode } from '../core/common.schema.js';
import { USER_NAME_MAX } from '../core/limits.js';

export const LoginBody = Type.Object(
  {
    tenantId: TenantCode('Six-digit tenant code'),
    username: Type.String({ minLength: 1, maxLength: USER_NAME_MAX }),
    password: Type.String({ minLength: 1, maxLength: 128, writeOnly: true }),
  },
  { $id: 'LoginBody', examples: [{ tenantId: '000000', username: 'admin', password: 'change-me-please' }] },
);

export const LoginResult = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Seconds' }),
  },
  { $id: 'LoginResult' },
);

export const Me = Type.Object(
  {
    user: Type.Object({
      userId: EntityId(),
      userName: Type.String(),
      nickName: Type.String(),
      deptId: Nullable(EntityId()),
    }),
    tenant: Type.Object({
      id: Type.String(),
      tenantId: Type.String(),
      tenantName: Type.Union([Type.String(), Type.Null()]),
      companyName: Type.String(),
    }),
    roles: Type.Array(Type.String()),
    permissions: Type.Array(Type.String()),
  },
  { $id: 'Me' },
);
