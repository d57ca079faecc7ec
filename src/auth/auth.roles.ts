// Roles and RuoYi-style permission strings (DECISIONS §4). Routes declare the
// permission they need; a role's list is what /auth/me reports.

export type Role = 'superadmin' | 'admin' | 'user';

export const PLATFORM_TENANT = '000000';

const READ = ['system:dept:list', 'system:dept:query', 'system:tenant:list', 'system:tenant:query'];
const ADMIN = [
  ...READ,
  'system:dept:add',
  'system:dept:edit',
  'system:dept:remove',
  'system:user:list',
  'system:user:query',
  'system:user:add',
  'system:user:edit',
  'system:user:remove',
  'system:tenant:add',
  'system:tenant:edit',
  'system:tenant:remove',
  'monitor:operlog:list',
];

export const PERMISSIONS: Record<Role, readonly string[]> = {
  superadmin: ADMIN,
  admin: ADMIN,
  user: READ,
};

export type Permission = (typeof ADMIN)[number];
