import type { Id } from '../core/ids.js';
import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { Row } from 'postgres';
import type { Db, Tx } from '../db/database.js';
import { field, fromRow, selectList } from '../db/fields.js';
import { BLOCKING_COLUMNS, BLOCKING_TENANT, type TenantState } from '../identity/tenant.state.js';
import { SETTING_FIELDS } from './sso.fields.js';
import type { ConnectionKey } from './sso.rules.js';

// The statements of a sign-in (docs/sso.md#the-flow): the connection as the
// flow needs it (its secret included), the sign-in in flight, the person a
// provider's subject names, and the one-time code. Every statement names the
// tenant: the connection ids and the codes carry it.

/** How long a sign-in may stay at the provider, and a one-time code unredeemed. */
const ATTEMPT_TTL = '10 minutes';
const CODE_TTL = '60 seconds';

/** Only a hash of a state or a code is kept: a leaked table holds nothing to present. */
const hashOf = (secret: string): Buffer => createHash('sha256').update(secret).digest();

/** What a sign-in reads of a connection: its settings (sso.fields.ts) and its client secret, which no answer of the API carries. */
const SIGN_IN_FIELDS = { ...SETTING_FIELDS, clientSecret: field('client_secret', Type.String()) };

/** The row's other columns (BLOCKING_COLUMNS) are the rest of the connection's TenantState. */
const toSignInConnection = (row: Row) => ({ ...(row as TenantState), ...fromRow(row, SIGN_IN_FIELDS) });
export type SignInConnection = ReturnType<typeof toSignInConnection>;

/** The connection with its secret and its tenant chain's state (is the tenant suspended?). */
export async function signInConnection(db: Db, key: ConnectionKey): Promise<SignInConnection | undefined> {
  const [row] = await db<Row[]>`
    SELECT ${selectList(db, 'c', SIGN_IN_FIELDS)}, ${BLOCKING_COLUMNS(db)}
    FROM sso_connection c JOIN sys_tenant t ON t.tenant_id = c.tenant_id
    ${BLOCKING_TENANT(db)}
    WHERE c.tenant_id = ${key.tenantId} AND c.connection_id = ${key.connectionId}`;
  return row && toSignInConnection(row);
}

/**
 * Whether the connection is still there and enabled, share-locking it (as a
 * login share-locks the person and the tenant), so a disable or delete
 * waits for a sign-in being finished and one after it is seen.
 */
export async function lockConnectionEnabled(tx: Tx, key: ConnectionKey): Promise<boolean> {
  const [row] = await tx<{ status: string }[]>`
    SELECT status FROM sso_connection WHERE tenant_id = ${key.tenantId} AND connection_id = ${key.connectionId} FOR SHARE`;
  return row?.status === '0';
}

export interface Attempt {
  codeVerifier: string;
  nonce: string;
  redirectUri: string;
  returnTo: string;
  spaState: string;
  spaChallenge: string;
}

/** Keeps a sign-in in flight under its state's hash, and drops the tenant's attempts that have expired. */
export async function saveAttempt(db: Db, key: ConnectionKey, state: string, attempt: Attempt): Promise<void> {
  await db`DELETE FROM sso_attempt WHERE tenant_id = ${key.tenantId} AND expires_at < now()`;
  await db`
    INSERT INTO sso_attempt (tenant_id, state_hash, connection_id, code_verifier, nonce, redirect_uri, return_to, spa_state, spa_challenge, expires_at)
    VALUES (${key.tenantId}, ${hashOf(state)}, ${key.connectionId}, ${attempt.codeVerifier}, ${attempt.nonce}, ${attempt.redirectUri},
      ${attempt.returnTo}, ${attempt.spaState}, ${attempt.spaChallenge}, now() + ${ATTEMPT_TTL}::interval)`;
}

/** Takes the sign-in a callback's state names: once, and only before it expires. */
export async function takeAttempt(db: Db, key: ConnectionKey, state: string): Promise<Attempt | undefined> {
  const [row] = await db<Attempt[]>`
    DELETE FROM sso_attempt
    WHERE tenant_id = ${key.tenantId} AND state_hash = ${hashOf(state)} AND connection_id = ${key.connectionId} AND expires_at > now()
    RETURNING code_verifier AS "codeVerifier", nonce, redirect_uri AS "redirectUri", return_to AS "returnTo",
      spa_state AS "spaState", spa_challenge AS "spaChallenge"`;
  return row;
}

/** A person as the sign-in judges it: live or not, enabled or not. */
export interface Person {
  userId: Id;
  userName: string;
  status: string;
}

const PERSON = (db: Db) => db`u.user_id AS "userId", u.user_name AS "userName", u.status`;

/** The live person this connection has linked to the subject. */
export async function linkedPerson(db: Db, key: ConnectionKey, subject: string): Promise<Person | undefined> {
  const [row] = await db<Person[]>`
    SELECT ${PERSON(db)} FROM sso_link l JOIN sys_user u ON u.tenant_id = l.tenant_id AND u.user_id = l.user_id
    WHERE l.tenant_id = ${key.tenantId} AND l.connection_id = ${key.connectionId} AND l.subject = ${subject} AND u.del_flag = '0'`;
  return row;
}

/** The one live person whose SCIM externalId is the subject (the provider's own id for it); none when two share it. */
export async function personByExternalId(db: Db, tenantId: string, subject: string): Promise<Person | undefined> {
  const rows = await db<Person[]>`
    SELECT ${PERSON(db)} FROM sys_user u WHERE u.tenant_id = ${tenantId} AND u.external_id = ${subject} AND u.del_flag = '0'
    ORDER BY u.user_id LIMIT 2`;
  return rows.length === 1 ? rows[0] : undefined;
}

/** The one live person with this email (compared without case); none when two share it. */
export async function personByEmail(db: Db, tenantId: string, email: string): Promise<Person | undefined> {
  const rows = await db<Person[]>`
    SELECT ${PERSON(db)} FROM sys_user u WHERE u.tenant_id = ${tenantId} AND lower(u.email) = lower(${email}) AND u.del_flag = '0'
    ORDER BY u.user_id LIMIT 2`;
  return rows.length === 1 ? rows[0] : undefined;
}

/** Links the subject to the person (replacing a link to a person since deleted); true when a link was made. */
export async function link(tx: Tx, key: ConnectionKey, subject: string, userId: Id): Promise<boolean> {
  const rows = await tx`
    INSERT INTO sso_link (tenant_id, connection_id, subject, user_id) VALUES (${key.tenantId}, ${key.connectionId}, ${subject}, ${userId})
    ON CONFLICT (tenant_id, connection_id, subject) DO UPDATE SET user_id = EXCLUDED.user_id, create_time = EXCLUDED.create_time
      WHERE sso_link.user_id <> EXCLUDED.user_id
    RETURNING 1`;
  return rows.length > 0;
}

/** Keeps a one-time code for the person, bound to the SPA's PKCE challenge. */
export async function saveCode(tx: Tx, key: ConnectionKey, code: string, userId: Id, spaChallenge: string): Promise<void> {
  await tx`DELETE FROM sso_code WHERE tenant_id = ${key.tenantId} AND expires_at < now()`;
  await tx`
    INSERT INTO sso_code (tenant_id, code_hash, connection_id, user_id, spa_challenge, expires_at)
    VALUES (${key.tenantId}, ${hashOf(code)}, ${key.connectionId}, ${userId}, ${spaChallenge}, now() + ${CODE_TTL}::interval)`;
}

/** Takes a one-time code: once, and only before it expires. */
export async function takeCode(db: Db, tenantId: string, code: string) {
  const [row] = await db<{ connectionId: number; userId: Id; spaChallenge: string }[]>`
    DELETE FROM sso_code WHERE tenant_id = ${tenantId} AND code_hash = ${hashOf(code)} AND expires_at > now()
    RETURNING connection_id AS "connectionId", user_id AS "userId", spa_challenge AS "spaChallenge"`;
  return row;
}
