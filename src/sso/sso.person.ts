import type { Tx } from '../db/database.js';
import { AppError } from '../core/app.error.js';
import { USER_NAME_MAX } from '../core/limits.js';
import { recordAudit } from '../audit/audit.record.js';
import type { Actor } from '../identity/caller.js';
import { createUser } from '../users/user.sql.js';
import { emailVouchedFor, type ConnectionKey } from './sso.rules.js';
import { linkedPerson, personByEmail, personByExternalId, type Person, type SignInConnection } from './sso.signin.sql.js';

// Rule: who signs in (docs/sso.md#who-signs-in). Always a person of the
// connection's own tenant, never another's, found in this order: the link a
// sign-in made before; with `link: externalId`, the live user whose SCIM
// externalId is the subject; with `link: email`, the one live user with the
// email, only when the provider says it is verified and its domain is one the
// connection vouches for; with `jit`, a new user. Otherwise nobody.

export type FoundBy = 'link' | 'externalId' | 'email' | 'jit';

export async function resolvePerson(
  tx: Tx,
  actor: Actor,
  key: ConnectionKey,
  connection: SignInConnection,
  claims: Record<string, unknown>,
  subject: string,
): Promise<{ person: Person; how: FoundBy } | undefined> {
  const linked = await linkedPerson(tx, key, subject);
  if (linked) return { person: linked, how: 'link' };
  if (connection.link === 'externalId') {
    const person = await personByExternalId(tx, key.tenantId, subject);
    if (person) return { person, how: 'externalId' };
  }
  if (connection.link === 'email') {
    const email = emailVouchedFor(claims, connection.emailDomains);
    const person = email === undefined ? undefined : await personByEmail(tx, key.tenantId, email);
    if (person) return { person, how: 'email' };
  }
  if (!connection.jit) return undefined;
  const person = await createJitPerson(tx, actor, connection, claims, subject);
  return person && { person, how: 'jit' };
}

const clip = (text: unknown, max: number): string | undefined =>
  typeof text === 'string' && text.trim() !== '' ? text.trim().slice(0, max) : undefined;

/**
 * A new user of role `user` for a person no rule found: userName the email
 * (when the provider vouches for it, else the subject), nickName the name the
 * provider gives, no password, in the connection's department. Anything
 * that stops the create (a user already holding that name, the tenant's
 * account quota) means nobody signs in, rather than signing in someone else.
 */
async function createJitPerson(tx: Tx, actor: Actor, connection: SignInConnection, claims: Record<string, unknown>, subject: string) {
  const email = emailVouchedFor(claims, connection.emailDomains) ?? (claims.email_verified === true ? clip(claims.email, 254) : undefined);
  const userName = (email ?? subject).slice(0, USER_NAME_MAX);
  if (/\s/.test(userName)) return undefined;
  const nickName = clip(claims.name, 100) ?? clip(claims.preferred_username, 100) ?? userName.slice(0, 100);
  let userId: number;
  try {
    await tx.savepoint(async (sp) => {
      userId = await createUser(sp, actor, { userName, nickName, email: email ?? null, roles: ['user'], deptId: connection.jitDeptId }, {});
    });
  } catch (err) {
    if (err instanceof AppError || (err as { code?: string }).code === '23505') return undefined;
    throw err;
  }
  const person: Person = { userId: userId!, userName, status: '0' };
  await recordAudit(tx, actor, [{ action: 'sso.jit', entityType: 'user', entityId: person.userId, changes: { userName, subject } }]);
  return person;
}
