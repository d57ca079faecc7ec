// Roles and RuoYi-style permission strings (docs/api-rules.md#roles). Routes declare the
// permission they need; a role's list is what /auth/me reports.

export type Role = 'superadmin' | 'admin' | 'user';

export const PLATFORM_TENANT = '000000';

// `as const` keeps each string's literal type, so Permission is the closed
// union of these strings: a route whose config.permission is misspelt does
// not compile (FastifyContextConfig.permission is a Permission).
const READ = ['system:dept:list', 'system:dept:query', 'system:tenant:list', 'system:tenant:query', 'system:quota:query'] as const;
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
  'system:webhook:list',
  'system:webhook:query',
  'system:webhook:add',
  'system:webhook:edit',
  'system:webhook:remove',
  'system:apikey:list',
  'system:apikey:query',
  'system:apikey:add',
  'system:apikey:remove',
  'system:sso:list',
  'system:sso:query',
  'system:sso:add',
  'system:sso:edit',
  'system:sso:remove',
  'system:quota:consume',
  'system:package:list',
  'system:package:query',
] as const;
/** The platform's own resources: packages are written by the superadmin alone. */
const SUPERADMIN = [...ADMIN, 'system:package:add', 'system:package:edit', 'system:package:remove'] as const;

export type Permission = (typeof SUPERADMIN)[number];

export const PERMISSIONS: Record<Role, readonly Permission[]> = {
  superadmin: SUPERADMIN,
  admin: ADMIN,
  user: READ,
};
