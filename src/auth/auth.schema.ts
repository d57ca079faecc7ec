import { Type } from '@sinclair/typebox';
import { USER_NAME_MAX } from '../core/limits.js';

export const LoginBody = Type.Object(
  {
    tenantId: Type.String({ pattern: '^[0-9]{6}$', description: 'Six-digit tenant code' }),
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
      userId: Type.Integer(),
      userName: Type.String(),
      nickName: Type.String(),
      deptId: Type.Union([Type.Integer(), Type.Null()]),
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
