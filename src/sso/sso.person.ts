import type { Id } from '../core/ids.js';
import type { Tx } from '../db/database.js';
import { recordAudit } from '../audit/audit.record.js';
import type { Actor } from '../identity/caller.js';
import { createUser } from '../users/user.sql.js';
import { AccountQuotaReached } from '../users/user.rules.js';
import { violatesUnique } from '../db/pg.errors.js';
import type { ConnectionKey } from './sso.rules.js';
import { emailVouchedFor, jitAccount } from './sso.signin.rules.js';
import { linkedPerson, personByEmail, personByExternalId, type Person, type SignInConnection } from './sso.signin.sql.js';

// Who signs in (docs/sso.md#who-signs-in). Always a person of the
// connection's own tenant, never another's, found in this order: the link a
// sign-in made before; with `link: externalId`, the live user whose SCIM
// externalId is the subject; with `link: email`, the one live user with the
// email, only when the provider says it is verified and its domain is one the
// connection vouches for; with `jit`, a new user. Otherwise nobody. The
// rules it applies (emailVouchedFor, jitAccount) are in sso.signin.rules.ts.

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

/**
 * A new user of role `user` for a person no rule found: the account
 * jitAccount names, no password, in the connection's department. A user
 * already holding that name, or the tenant's account quota reached, means
 * nobody signs in, rather than signing in someone else.
 */
async function createJitPerson(tx: Tx, actor: Actor, connection: SignInConnection, claims: Record<string, unknown>, subject: string) {
  const account = jitAccount(claims, subject);
  if (!account) return undefined;
  const { userName } = account;
  let userId: Id;
  try {
    await tx.savepoint(async (sp) => {
      userId = await createUser(sp, actor, { ...account, roles: ['user'], deptId: connection.jitDeptId }, {});
    });
  } catch (err) {
    // The two refusals this create means to turn into "nobody signs in"; anything else (a department deleted meanwhile, a
    // database fault) is not a verdict on the person and goes on to the error handler.
    if (err instanceof AccountQuotaReached || violatesUnique(err, 'sys_user_name_live_key')) return undefined;
    throw err;
  }
  const person: Person = { userId: userId!, userName, status: '0' };
  await recordAudit(tx, actor, [{ action: 'sso.jit', entityType: 'user', entityId: person.userId, changes: { userName, subject } }]);
  return person;
}
