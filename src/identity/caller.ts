import type { Id } from '../core/ids.js';
import { assert } from '../core/app.error.js';
import { PLATFORM_TENANT, type Role } from './roles.js';

// Who is acting. The rules (src/*/*.sql.ts, *.rules.ts) take these types
// and never a request: this module loads no web framework, so a rule can be
// called from a route, a script or a test alike. The auth plugin
// (src/auth/auth.plugin.ts) is what turns a verified token into a Caller.

/** Who is calling: the user behind a verified token and its live session, and the request it came with. */
export interface Caller {
  tenantId: string;
  userId: Id;
  userName: string;
  role: Role;
  sessionId: string;
  /**
   * Set when the caller is an API key (docs/security.md#api-keys): then there
   * is no user (userId 0) and no session (sessionId empty), and userName is
   * `apikey:<name>`, which is what its audit records show.
   */
  apiKeyId?: number;
  /** The request's X-Request-Id and client address, for the audit record; absent outside a request. */
  requestId?: string;
  ip?: string;
}

/**
 * Who a write is attributed to in its audit record, and which tenant the
 * write lands in. Narrower than Caller because some writers have no
 * session: a login (not yet signed in) and a tenant's first admin and root
 * department, provisioned by a caller from a tenant above.
 */
export interface Actor extends Pick<Caller, 'tenantId' | 'userName' | 'requestId' | 'ip'> {
  /** The acting user's own tenant, when it is not tenantId (provisioning from above). */
  userTenantId?: string;
}

/** The request-derived part of an actor: what a login records before anyone is signed in. */
export type RequestOrigin = Pick<Actor, 'requestId' | 'ip'>;

/** What requestActor needs of a request: structurally a Fastify request once the auth plugin has run. */
export interface AuthenticatedRequest {
  caller: Caller;
  id: string;
  ip: string;
}

/** The caller of a request, with the request id and address its writes' audit records carry. */
export function requestActor(request: AuthenticatedRequest): Caller {
  return { ...request.caller, requestId: request.id, ip: request.ip };
}

/** The platform's superadmin: the one role that reaches every tenant. */
export function isSuperadmin(caller: Pick<Caller, 'role' | 'tenantId'>): boolean {
  return caller.role === 'superadmin' && caller.tenantId === PLATFORM_TENANT;
}

/**
 * Rule: writes act in the caller's own tenant. A body may repeat that
 * tenantId; naming another one is refused (403), never silently redirected.
 */
export function assertOwnTenant(actor: Actor, tenantId: string | undefined, what: string): void {
  assert(
    tenantId === undefined || tenantId === actor.tenantId,
    403,
    `tenantId ${tenantId} is not your tenant; ${what} are always written in your own tenant (${actor.tenantId})`,
  );
}
