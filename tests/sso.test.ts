import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importJWK, SignJWT, type JWK } from 'jose';
import { Webhook } from 'standardwebhooks';
import { buildTestApp, Client, createdId, type TestApp } from './support/app.js';
import { createTenantWithAdmin, readTenant, writable, type TenantWithAdmin } from './support/tenant-fixtures.js';
import { ScimClient, URN } from './support/scim.js';
import { freePort, publicPart, signingKey, startProvider, type Jwk, type RunningProvider } from './support/oidc/provider.js';
import { authorize, callback, callbackOf, handback, pastProvider, pkce, PUBLIC_URL, redeem, RETURN_TO, signedIn, signIn } from './support/sso.js';
import { testOutbound } from './support/outbound.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import { ProviderClients } from '../src/sso/sso.client.js';
import { createConnection, updateConnection } from '../src/sso/sso.sql.js';
import { transaction } from '../src/db/retry.js';
import { parseAllowedCidrs } from '../src/outbound/outbound.address.js';

// Single sign-on through HTTP (docs/sso.md) against a real OpenID Provider
// (oidc-provider) on loopback: connections and their scope, the discovery
// read, the flow (authorize, the provider, callback, token), who signs in,
// every refusal, SSO required, a key rotation at the provider, and an SSO
// record delivered to a webhook.

const API = '/system/sso-api';
const CLIENT = { client_id: 'dept-service', client_secret: 'a-long-client-secret-for-the-test-provider' };
/** Another application registered at the same provider (a code minted for it must not sign anyone in here). */
const OTHER_CLIENT = { client_id: 'other-app', client_secret: 'the-other-applications-long-client-secret' };

let t: TestApp;
let a: TenantWithAdmin;
let scim: ScimClient;
let port: number;
let keys: Jwk[];
let op: RunningProvider | undefined;
let kateScimId: string;
const ids = {} as {
  byExternalId: string;
  byEmail: string;
  jit: string;
  entra: string;
  disabled: string;
  interrupted: string;
  doomed: string;
  slashed: string;
  jitAnyDomain: string;
  jitGoneDept: string;
};

/** The provider's people: the claims each account's ID token carries. */
const ACCOUNTS: Record<string, Record<string, unknown>> = {
  alice: { email: 'alice@example.com', email_verified: true, name: 'Alice A' },
  bob: { email: 'bob@example.com', email_verified: true, name: 'Bob B' },
  mallory: { email: 'mallory@example.com', email_verified: false },
  foreign: { email: 'eve@elsewhere.org', email_verified: true },
  carol: { email: 'carol@example.com', email_verified: true },
  kate: { email: 'kate@example.com', email_verified: true },
  newbie: { email: 'newbie@example.com', email_verified: true, name: 'New Person' },
  entra: { oid: 'oid-of-dan', tid: 'tid-good', email: 'dan@example.com', email_verified: true },
  entraOther: { oid: 'oid-of-dan', tid: 'tid-evil' },
  // email_verified as AWS Cognito sends it: the string "true" counts as true, "false" as false, in every rule.
  cora: { email: 'cora@example.com', email_verified: 'true' },
  nell: { email: 'nell@other.org', email_verified: 'true' },
  nora: { email: 'nora@other.org', email_verified: 'false' },
  // A new person whose email is a live user's name already.
  twin: { email: 'bob@example.com', email_verified: true },
  quotaed: { email: 'quinn@other.org', email_verified: true },
  homeless: { email: 'hal@other.org', email_verified: true },
};

async function restartProvider(newKeys: Jwk[] = keys) {
  await op?.stop();
  keys = newKeys;
  const redirect_uris = Object.values(ids).map(callbackOf);
  op = await startProvider({
    port,
    keys,
    clients: [
      { ...CLIENT, redirect_uris },
      { ...OTHER_CLIENT, redirect_uris },
    ],
    accounts: ACCOUNTS,
  });
}

async function connect(name: string, body: Record<string, unknown> = {}, as: Client = a.admin) {
  const res = await as.post(API, {
    name,
    issuer: `http://127.0.0.1:${port}`,
    clientId: CLIENT.client_id,
    clientSecret: CLIENT.client_secret,
    returnUrls: [RETURN_TO],
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as Record<string, any>;
}

/** The connection as GET answers it, less what a PUT does not take. */
async function writableConnection(id: string): Promise<Record<string, unknown>> {
  const read = await a.admin.get(`${API}/${id}`);
  expect(read.status).toBe(200);
  const { redirectUri: _r, createBy: _cb, createTime: _ct, updateBy: _ub, updateTime: _ut, tenantId: _t, ...body } = read.body.data;
  return body;
}

beforeAll(async () => {
  t = await buildTestApp({ config: { publicUrl: PUBLIC_URL, ...testOutbound('127.0.0.0/8') } });
  a = await createTenantWithAdmin(t);
  scim = await ScimClient.forTenant(a.admin);
  const user = (userName: string, extra: Record<string, unknown> = {}) =>
    scim.post('/Users', { schemas: [URN.user], userName, emails: [{ value: userName, type: 'work', primary: true }], ...extra });
  expect((await user('alice@example.com', { externalId: 'alice' })).status).toBe(201);
  expect((await user('bob@example.com')).status).toBe(201);
  expect((await user('mallory@example.com')).status).toBe(201);
  expect((await user('eve@elsewhere.org')).status).toBe(201);
  expect((await user('carol@example.com', { externalId: 'carol', active: false })).status).toBe(201);
  expect((await user('dan@example.com', { externalId: 'oid-of-dan' })).status).toBe(201);
  expect((await user('cora@example.com')).status).toBe(201);
  const kate = await user('kate@example.com', { externalId: 'kate' });
  expect(kate.status).toBe(201);
  kateScimId = kate.body.id;
  port = await freePort();
  ids.byExternalId = (await connect('By externalId')).id;
  ids.byEmail = (await connect('By email', { link: 'email', emailDomains: ['example.com'] })).id;
  ids.jit = (await connect('Just in time', { link: 'none', jit: true, emailDomains: ['example.com'] })).id;
  ids.entra = (await connect('Entra', { subjectClaim: 'oid', allowedTids: ['tid-good'] })).id;
  ids.disabled = (await connect('Disabled', { status: '1' })).id;
  ids.interrupted = (await connect('Disabled meanwhile')).id;
  ids.doomed = (await connect('Deleted meanwhile')).id;
  // The provider's issuer is http://127.0.0.1:<port>, without the slash: its tokens' iss is not this connection's issuer.
  ids.slashed = (await connect('Issuer with a slash', { issuer: `http://127.0.0.1:${port}/` })).id;
  ids.jitAnyDomain = (await connect('Just in time, no domains', { link: 'none', jit: true })).id;
  const tree = (await a.admin.get('/system/dept-api/list')).body.data as { deptId: number; parentId: number }[];
  const home = createdId(await a.admin.post('/system/dept-api', { parentId: tree.find((d) => d.parentId === 0)!.deptId, deptName: 'JIT home' }));
  ids.jitGoneDept = (await connect('Just in time, into a department deleted later', { link: 'none', jit: true, jitDeptId: home })).id;
  await restartProvider([signingKey()]);
}, 120_000);
afterAll(async () => {
  await op?.stop();
  await t?.close();
});

describe('connections', () => {
  it('are created with the redirect URI from PUBLIC_URL and read back without the client secret, anywhere', async () => {
    const created = await connect('Read back', { scopes: 'openid email' });
    expect(created.redirectUri).toBe(`${PUBLIC_URL}/auth/sso/${created.id}/callback`);
    expect(created.id).toMatch(new RegExp(`^${a.tenant.tenantId}-\\d+$`));
    expect(created).toMatchObject({
      tenantId: a.tenant.tenantId,
      link: 'externalId',
      subjectClaim: 'sub',
      jit: false,
      status: '0',
      scopes: 'openid email',
    });
    const one = await a.admin.get(`${API}/${created.id}`);
    const list = await a.admin.get(`${API}/list?pageNum=1&pageSize=50`);
    const audit = await t.root.get(`/system/audit-api/list?action=sso.create&entityId=${created.id}`);
    for (const answer of [created, one.body, list.body, audit.body]) expect(JSON.stringify(answer)).not.toContain(CLIENT.client_secret);
    expect(one.body.data).toEqual(created);
    expect(list.body.data.rows.map((c: any) => c.id)).toContain(created.id);
    expect(audit.body.data.rows).toHaveLength(1);
  });

  it('are managed by the tenant above (not a sibling), and not by a user', async () => {
    const child = await createTenantWithAdmin(t, a.admin);
    const sibling = await createTenantWithAdmin(t);
    const made = await connect('For the child', { tenantId: child.tenant.tenantId });
    expect(made.tenantId).toBe(child.tenant.tenantId);
    expect((await child.admin.get(`${API}/${made.id}`)).status).toBe(200);
    expect((await sibling.admin.get(`${API}/${made.id}`)).status).toBe(404);
    expect(
      (
        await sibling.admin.post(API, {
          name: 'x',
          issuer: 'https://idp.example.com',
          clientId: 'c',
          clientSecret: 's',
          returnUrls: [RETURN_TO],
          tenantId: a.tenant.tenantId,
        })
      ).status,
    ).toBe(404);
    const user = await scim.post('/Users', { schemas: [URN.user], userName: `u${Date.now()}`, password: 'user-password-1' });
    const asUser = await t.login(a.tenant.tenantId, user.body.userName, 'user-password-1');
    expect((await asUser.get(`${API}/list`)).status).toBe(403);
    expect((await t.root.get(`${API}/${made.id}`)).status).toBe(200);
    // A list covers what its caller manages: the tenant above lists the child's too, the child not the one above,
    // a sibling neither; tenantId narrows the list to one tenant of the caller's subtree.
    const listed = async (as: Client, query = '') => {
      const res = await as.get(`${API}/list?pageNum=1&pageSize=100${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.data.rows as { id: string; tenantId: string }[]).map((c) => c.id);
    };
    const own = await listed(a.admin);
    expect(own).toContain(made.id);
    expect(own).toContain(ids.byExternalId);
    expect(await listed(child.admin)).toEqual([made.id]);
    expect(await listed(sibling.admin)).toEqual([]);
    expect(await listed(a.admin, `&tenantId=${child.tenant.tenantId}`)).toEqual([made.id]);
    expect(await listed(a.admin, `&tenantId=${a.tenant.tenantId}`)).not.toContain(made.id);
    expect((await child.admin.get(`${API}/list?tenantId=${a.tenant.tenantId}`)).status).toBe(404);
    expect(await listed(t.root)).toEqual(expect.arrayContaining([made.id, ids.byExternalId]));
    // An admin API key of the tenant above manages them too.
    expect((await scim.as.get(`${API}/${made.id}`)).status).toBe(200);
  });

  it('keep their secret through a PUT without one, refuse a stale If-Match, and refuse bad URLs', async () => {
    const made = await connect('Replaced');
    const read = await a.admin.get(`${API}/${made.id}`);
    const { redirectUri: _r, createBy: _cb, createTime: _ct, updateBy: _ub, updateTime: _ut, tenantId: _t, ...body } = read.body.data;
    const put = (extra: Record<string, unknown>, etag?: string) =>
      a.admin.app.inject({
        method: 'PUT',
        url: API,
        payload: { ...body, ...extra },
        headers: { authorization: `Bearer ${a.admin.token}`, ...(etag ? { 'if-match': etag } : {}) },
      });
    expect((await put({ name: 'Renamed' }, String(read.headers.etag))).statusCode).toBe(200);
    expect((await put({ name: 'Again' }, String(read.headers.etag))).statusCode).toBe(412);
    const [row] = await t.sql<
      { secret: string }[]
    >`SELECT client_secret AS secret FROM sso_connection WHERE tenant_id = ${a.tenant.tenantId} AND connection_id = ${Number(made.id.split('-')[1])}`;
    expect(row!.secret).toBe(CLIENT.client_secret);
    expect(
      (
        await a.admin.post(API, {
          name: 'x',
          issuer: 'https://idp.example.com',
          clientId: 'c',
          clientSecret: 's',
          returnUrls: ['http://spa.example.com/done'],
        })
      ).status,
    ).toBe(400);
    expect(
      (await a.admin.post(API, { name: 'x', issuer: 'ftp://idp.example.com', clientId: 'c', clientSecret: 's', returnUrls: [RETURN_TO] })).status,
    ).toBe(400);
    expect(
      (await a.admin.post(API, { name: 'x', issuer: 'https://10.0.0.1', clientId: 'c', clientSecret: 's', returnUrls: [RETURN_TO] })).status,
    ).toBe(400);
    // The write functions hold the rule themselves: called without the route, they refuse the same URLs.
    const caller = { tenantId: a.tenant.tenantId, userId: 0, userName: 'direct-call', role: 'admin' as const, sessionId: '' };
    const rule = { allowed: undefined };
    for (const urls of [{ issuer: 'https://10.0.0.1' }, { issuer: 'https://idp.example.com?x=1' }, { returnUrls: ['http://spa.example.com/done'] }]) {
      const input = { ...body, name: 'Direct', clientSecret: 's', ...urls };
      await expect(
        transaction(t.appSql, (tx) => createConnection(tx, caller, input, rule)),
        JSON.stringify(urls),
      ).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/^(issuer|returnUrls)/) });
      await expect(
        transaction(t.appSql, (tx) => updateConnection(tx, caller, input, rule)),
        JSON.stringify(urls),
      ).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/^(issuer|returnUrls)/) });
    }
    expect((await a.admin.get(`${API}/${made.id}`)).body.data.name).toBe('Renamed');
  });

  it('are deleted: 200, gone, an sso.delete record; neither that nor an update record holds a secret', async () => {
    const made = await connect('Deleted');
    const replacement = 'a-replacement-secret-no-record-may-hold';
    expect((await a.admin.put(API, { ...(await writableConnection(made.id)), name: 'Deleted soon', clientSecret: replacement })).status).toBe(200);
    expect((await a.admin.delete(`${API}/${made.id}`)).status).toBe(200);
    expect((await a.admin.get(`${API}/${made.id}`)).status).toBe(404);
    expect((await a.admin.delete(`${API}/${made.id}`)).status).toBe(404);
    const recorded = async (action: string) => (await t.root.get(`/system/audit-api/list?action=${action}&entityId=${made.id}`)).body.data.rows;
    const updates = await recorded('sso.update');
    expect(updates.map((r: any) => r.changes)).toEqual([{ name: { before: 'Deleted', after: 'Deleted soon' }, clientSecret: 'replaced' }]);
    const deletes = await recorded('sso.delete');
    expect(deletes).toEqual([
      expect.objectContaining({
        entityType: 'sso',
        entityId: made.id,
        tenantId: a.tenant.tenantId,
        changes: expect.objectContaining({ name: 'Deleted soon', issuer: made.issuer, clientId: CLIENT.client_id, returnUrls: [RETURN_TO] }),
      }),
    ]);
    for (const record of [...updates, ...deletes]) {
      expect(JSON.stringify(record)).not.toContain(CLIENT.client_secret);
      expect(JSON.stringify(record)).not.toContain(replacement);
    }
  });
});

describe('discovery for a login page', () => {
  it("names the tenant's enabled connections; an unknown tenant answers the same shape, empty", async () => {
    const res = await a.admin.app.inject({ method: 'GET', url: `/auth/sso/connections?tenantId=${a.tenant.tenantId}` });
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data.ssoRequired).toBe(false);
    expect(data.connections.map((c: any) => c.id)).toContain(ids.byExternalId);
    expect(data.connections.map((c: any) => c.id)).not.toContain(ids.disabled);
    const unknown = await a.admin.app.inject({ method: 'GET', url: '/auth/sso/connections?tenantId=999999' });
    expect(unknown.json().data).toEqual({ ssoRequired: false, connections: [] });
  });
});

describe('signing in', () => {
  it('by the SCIM externalId: exactly what a password login answers, a session like any other, linked once', async () => {
    const first = await signIn(t, ids.byExternalId, { account: 'alice' });
    expect(first.error).toBeNull();
    expect(Object.keys(first.token!.body.data).sort()).toEqual(['access_token', 'expires_in', 'token_type']);
    const alice = signedIn(t, first.token);
    const me = await alice.get('/auth/me');
    expect(me.body.data.user.userName).toBe('alice@example.com');
    const second = await signIn(t, ids.byExternalId, { account: 'alice' });
    expect(second.token!.status).toBe(200);
    const links = await t.root.get(`/system/audit-api/list?action=sso.link&tenantId=${a.tenant.tenantId}`);
    expect(links.body.data.rows.filter((r: any) => r.changes.connectionId === ids.byExternalId && r.changes.subject === 'alice')).toHaveLength(1);
    expect((await t.root.get(`/system/audit-api/list?action=auth.sso&tenantId=${a.tenant.tenantId}`)).body.data.rows.length).toBeGreaterThanOrEqual(
      2,
    );
    expect((await alice.post('/auth/logout')).status).toBe(200);
    expect((await alice.get('/auth/me')).status).toBe(401);
    // The records reach the change feed (and so the webhooks and streams) like every other.
    const feed = (await a.admin.get('/system/audit-api/changes?limit=1000')).body.data.events.map((e: any) => e.action);
    expect(feed).toEqual(expect.arrayContaining(['sso.create', 'sso.link', 'auth.sso']));
  });

  it('a link, once made, is kept: the externalId moving to another person later does not move the sign-in', async () => {
    const first = await signIn(t, ids.byExternalId, { account: 'kate' });
    expect((await signedIn(t, first.token).get('/auth/me')).body.data.user.userName).toBe('kate@example.com');
    expect((await scim.patch(`/Users/${kateScimId}`, [{ op: 'replace', path: 'externalId', value: 'kate-before' }])).status).toBe(200);
    const other = await scim.post('/Users', {
      schemas: [URN.user],
      userName: 'kate.now@example.com',
      externalId: 'kate',
      emails: [{ value: 'kate.now@example.com', type: 'work', primary: true }],
    });
    expect(other.status).toBe(201);
    const again = await signIn(t, ids.byExternalId, { account: 'kate' });
    expect((await signedIn(t, again.token).get('/auth/me')).body.data.user.userName).toBe('kate@example.com');
  });

  it('by a verified email of a domain the connection vouches for; never an unverified or foreign one', async () => {
    const bob = await signIn(t, ids.byEmail, { account: 'bob' });
    expect((await signedIn(t, bob.token).get('/auth/me')).body.data.user.userName).toBe('bob@example.com');
    expect((await signIn(t, ids.byEmail, { account: 'mallory' })).error).toBe('not_provisioned');
    expect((await signIn(t, ids.byEmail, { account: 'foreign' })).error).toBe('not_provisioned');
  });

  it('just in time: a new user of role user, recorded', async () => {
    const made = await signIn(t, ids.jit, { account: 'newbie' });
    const me = (await signedIn(t, made.token).get('/auth/me')).body.data;
    expect(me.user.userName).toBe('newbie@example.com');
    expect(me.roles).toEqual(['user']);
    const jit = await t.root.get(`/system/audit-api/list?action=sso.jit&tenantId=${a.tenant.tenantId}`);
    expect(jit.body.data.rows).toHaveLength(1);
  });

  it('email_verified as the string "true" counts as verified in every rule, "false" as not', async () => {
    const cora = await signIn(t, ids.byEmail, { account: 'cora' });
    expect((await signedIn(t, cora.token).get('/auth/me')).body.data.user.userName).toBe('cora@example.com');
    // Just in time, a verified email names the new user (no domain needed); an unverified one does not.
    const nell = await signIn(t, ids.jitAnyDomain, { account: 'nell' });
    expect((await signedIn(t, nell.token).get('/auth/me')).body.data.user).toMatchObject({ userName: 'nell@other.org' });
    const nora = await signIn(t, ids.jitAnyDomain, { account: 'nora' });
    expect((await signedIn(t, nora.token).get('/auth/me')).body.data.user).toMatchObject({ userName: 'nora' });
  });

  it('just in time: a name already taken or the account quota reached means nobody; any other failure is not hidden as one', async () => {
    expect((await signIn(t, ids.jitAnyDomain, { account: 'twin' })).error).toBe('not_provisioned');
    const tenant = await readTenant(t.root, String(a.tenant.id));
    const live = (await t.sql`SELECT count(*)::int AS n FROM sys_user WHERE tenant_id = ${a.tenant.tenantId} AND del_flag = '0'`)[0]!.n as number;
    expect((await t.root.put('/system/tenant-api', { ...writable(tenant), accountCount: live })).status).toBe(200);
    try {
      expect((await signIn(t, ids.jitAnyDomain, { account: 'quotaed' })).error).toBe('not_provisioned');
    } finally {
      const now = await readTenant(t.root, String(a.tenant.id));
      expect((await t.root.put('/system/tenant-api', { ...writable(now), accountCount: tenant.accountCount })).status).toBe(200);
    }
    // The connection's department deleted since it was saved: a fault of the connection, told as such, not "not provisioned".
    const { deptId } = (
      await t.sql`SELECT jit_dept_id::int AS "deptId" FROM sso_connection WHERE tenant_id = ${a.tenant.tenantId} AND connection_id = ${Number(ids.jitGoneDept.split('-')[1])}`
    )[0]!;
    expect((await a.admin.delete(`/system/dept-api/${deptId}`)).status).toBe(200);
    const { back } = await pastProvider(t, ids.jitGoneDept, { account: 'homeless' });
    const res = await callback(t, ids.jitGoneDept, back.searchParams);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().msg).toContain(`deptId ${deptId} is not a live department`);
  });

  it('Entra ID: oid is the subject, and a tid outside allowedTids is refused', async () => {
    const dan = await signIn(t, ids.entra, { account: 'entra' });
    expect((await signedIn(t, dan.token).get('/auth/me')).body.data.user.userName).toBe('dan@example.com');
    expect((await signIn(t, ids.entra, { account: 'entraOther' })).error).toBe('invalid_response');
  });
});

/** PUT of the connection as read, with `status`. */
async function setStatus(id: string, status: '0' | '1') {
  const res = await a.admin.put(API, { ...(await writableConnection(id)), status });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

describe('refusals', () => {
  it('a disabled person, the provider saying no, a person nobody provisioned', async () => {
    expect((await signIn(t, ids.byExternalId, { account: 'carol' })).error).toBe('user_disabled');
    expect((await signIn(t, ids.byExternalId, { deny: true })).error).toBe('access_denied');
    expect((await signIn(t, ids.byExternalId, { account: 'bob' })).error).toBe('not_provisioned');
  });

  it('a replayed state, a replayed code, a wrong verifier', async () => {
    const { res, verifier } = await authorize(t, ids.byExternalId);
    const { atProvider } = await import('./support/oidc/provider.js');
    const back = await atProvider(String(res.headers.location), callbackOf(ids.byExternalId), { account: 'alice' });
    const landed = handback(await callback(t, ids.byExternalId, back.searchParams));
    expect((await callback(t, ids.byExternalId, back.searchParams)).statusCode).toBe(400);
    const code = landed.searchParams.get('code')!;
    expect((await redeem(t, code, pkce().verifier)).status).toBe(400);
    expect((await redeem(t, code, verifier)).status).toBe(400); // a wrong verifier used the code up
    const again = await signIn(t, ids.byExternalId, { account: 'alice' });
    expect((await redeem(t, again.code!, again.verifier)).status).toBe(400); // redeemed once already by signIn
  });

  it('a connection disabled meanwhile: a sign-in in flight is refused at the callback, a code handed out before at the token', async () => {
    const inFlight = await pastProvider(t, ids.interrupted);
    const handedOut = await pastProvider(t, ids.interrupted);
    const code = handback(await callback(t, ids.interrupted, handedOut.back.searchParams)).searchParams.get('code')!;
    await setStatus(ids.interrupted, '1');
    try {
      const landed = handback(await callback(t, ids.interrupted, inFlight.back.searchParams));
      expect(landed.searchParams.get('error')).toBe('access_denied');
      expect(landed.searchParams.get('state')).toBe(inFlight.state);
      const refused = await redeem(t, code, handedOut.verifier);
      expect(refused.status).toBe(403);
      expect(refused.body.msg).toMatch(/disabled or deleted/);
      const failed = (await t.root.get(`/system/audit-api/list?action=auth.login_failed&tenantId=${a.tenant.tenantId}&pageSize=100`)).body.data.rows;
      expect(failed.filter((r: any) => r.changes.connectionId === ids.interrupted)).toEqual([
        expect.objectContaining({ changes: { via: 'sso', reason: 'access_denied', connectionId: ids.interrupted } }),
      ]);
    } finally {
      await setStatus(ids.interrupted, '0');
    }
    expect((await signIn(t, ids.interrupted, { account: 'alice' })).token!.status).toBe(200);
  });

  it('a connection deleted meanwhile: its sign-ins in flight and the codes it handed out go with it', async () => {
    const inFlight = await pastProvider(t, ids.doomed);
    const handedOut = await pastProvider(t, ids.doomed);
    const code = handback(await callback(t, ids.doomed, handedOut.back.searchParams)).searchParams.get('code')!;
    expect((await a.admin.delete(`${API}/${ids.doomed}`)).status).toBe(200);
    expect((await callback(t, ids.doomed, inFlight.back.searchParams)).statusCode).toBe(400);
    const gone = await redeem(t, code, handedOut.verifier);
    expect(gone.status).toBe(400);
    expect(gone.body.msg).toMatch(/Unknown, expired or already used code/);
    // A code a callback saved as the delete committed (after its DELETE of the codes) signs nobody in either.
    const late = { code: `${a.tenant.tenantId}.${randomBytes(32).toString('base64url')}`, ...pkce() };
    await t.sql`
      INSERT INTO sso_code (tenant_id, code_hash, connection_id, user_id, spa_challenge, expires_at)
      SELECT tenant_id, ${createHash('sha256').update(late.code).digest()}, ${Number(ids.doomed.split('-')[1])}, user_id, ${late.challenge},
        now() + interval '60 seconds'
      FROM sys_user WHERE tenant_id = ${a.tenant.tenantId} AND user_name = 'alice@example.com'`;
    expect((await redeem(t, late.code, late.verifier)).status).toBe(403);
  });

  it('a sign-in kept past its 10 minutes, and a code past its 60 s: refused', async () => {
    const hash = (secret: string) => createHash('sha256').update(secret).digest();
    const tenantId = a.tenant.tenantId;
    const stale = await pastProvider(t, ids.byExternalId);
    const stateHash = hash(stale.back.searchParams.get('state')!);
    const [attempt] = await t.sql<{ left: number }[]>`
      SELECT extract(epoch FROM expires_at - now())::float8 AS left FROM sso_attempt WHERE tenant_id = ${tenantId} AND state_hash = ${stateHash}`;
    expect(attempt!.left).toBeGreaterThan(600 - 30);
    expect(attempt!.left).toBeLessThanOrEqual(600);
    await t.sql`UPDATE sso_attempt SET expires_at = now() - interval '1 second' WHERE tenant_id = ${tenantId} AND state_hash = ${stateHash}`;
    const late = await callback(t, ids.byExternalId, stale.back.searchParams);
    expect(late.statusCode).toBe(400);
    expect(late.json().msg).toMatch(/expired/);

    const fresh = await pastProvider(t, ids.byExternalId);
    const code = handback(await callback(t, ids.byExternalId, fresh.back.searchParams)).searchParams.get('code')!;
    const [kept] = await t.sql<{ left: number }[]>`
      SELECT extract(epoch FROM expires_at - now())::float8 AS left FROM sso_code WHERE tenant_id = ${tenantId} AND code_hash = ${hash(code)}`;
    expect(kept!.left).toBeGreaterThan(60 - 30);
    expect(kept!.left).toBeLessThanOrEqual(60);
    await t.sql`UPDATE sso_code SET expires_at = now() - interval '1 second' WHERE tenant_id = ${tenantId} AND code_hash = ${hash(code)}`;
    const expired = await redeem(t, code, fresh.verifier);
    expect(expired.status).toBe(400);
    expect(expired.body.msg).toMatch(/expired/);
  });

  it('before the provider, a 400 envelope and no redirect: an unlisted return_to, no challenge, plain PKCE, a disabled connection, an unknown one', async () => {
    for (const query of [
      { return_to: 'https://evil.example.com/steal' },
      { return_to: `${RETURN_TO}/` },
      { code_challenge: undefined },
      { code_challenge_method: 'plain' },
    ]) {
      const { res } = await authorize(t, ids.byExternalId, query);
      expect(res.statusCode, JSON.stringify(query)).toBe(400);
      expect(res.headers.location).toBeUndefined();
      expect(res.json().code).toBe(400);
    }
    expect((await authorize(t, ids.disabled)).res.statusCode).toBe(400);
    expect((await authorize(t, `${a.tenant.tenantId}-999999`)).res.statusCode).toBe(404);
  });

  it("a provider that cannot be reached: 503 with a fixed message, never the provider's or the network's own words", async () => {
    const closed = await freePort();
    const unreachable = await connect('Unreachable', { issuer: `http://127.0.0.1:${closed}` });
    const { res } = await authorize(t, unreachable.id);
    expect(res.statusCode, res.body).toBe(503);
    expect(res.headers.location).toBeUndefined();
    expect(res.json().code).toBe(503);
    // The handler adds the request id to every 5xx message; nothing else follows the fixed text.
    expect(res.json().msg).toMatch(
      new RegExp(`^The identity provider of SSO connection ${unreachable.id} could not be reached; try again later \\(request id [0-9a-f-]+\\)$`),
    );
    expect(res.body).not.toContain(String(closed));
  });

  it('a nonce the provider did not sign for this sign-in, and a code minted at another issuer', async () => {
    const forged = await signIn(t, ids.byExternalId, { account: 'alice' }, (url) => url.searchParams.set('nonce', 'a-nonce-of-somebody-else'));
    expect(forged.error).toBe('invalid_response');
    const otherPort = await freePort();
    const other = await startProvider({
      port: otherPort,
      keys: [signingKey()],
      clients: [{ ...CLIENT, redirect_uris: [callbackOf(ids.byExternalId)] }],
      accounts: ACCOUNTS,
    });
    try {
      const swapped = await signIn(t, ids.byExternalId, { account: 'alice' }, (url) => (url.port = String(otherPort)));
      expect(swapped.error).toBe('invalid_response');
    } finally {
      await other.stop();
    }
    // A code the provider minted for another application it serves.
    const foreignClient = await signIn(t, ids.byExternalId, { account: 'alice' }, (url) => url.searchParams.set('client_id', OTHER_CLIENT.client_id));
    expect(foreignClient.error).toBe('invalid_response');
  });

  it("an ID token whose iss is not the connection's issuer exactly (openid-client matched the discovery document's issuer to it as a URL)", async () => {
    expect((await signIn(t, ids.slashed, { account: 'alice' })).error).toBe('invalid_response');
  });

  it("an ID token signed by the provider's key but naming another issuer or audience than the connection", async () => {
    // Below openid-client, which compares iss and aud too: the service's own check, against the provider's real key set.
    const clients = new ProviderClients({ allowed: parseAllowedCidrs('127.0.0.0/8') });
    const connection = { issuer: `http://127.0.0.1:${port}`, clientId: CLIENT.client_id, clientSecret: CLIENT.client_secret };
    const jwksUri = (await clients.configuration(connection)).serverMetadata().jwks_uri!;
    const key = keys[0]!;
    const mint = async (claims: { iss: string; aud: string }) =>
      new SignJWT({ sub: 'alice', ...claims })
        .setProtectedHeader({ alg: 'RS256', kid: String(key.kid) })
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(await importJWK(key as JWK, 'RS256'));
    const verify = async (claims: { iss: string; aud: string }) => clients.verifyIdToken(connection, await mint(claims), jwksUri);
    expect(await verify({ iss: connection.issuer, aud: CLIENT.client_id })).toMatchObject({ sub: 'alice' });
    await expect(verify({ iss: `http://127.0.0.1:${port}/`, aud: CLIENT.client_id })).rejects.toThrow(/"iss" claim/);
    await expect(verify({ iss: 'https://idp.example.com', aud: CLIENT.client_id })).rejects.toThrow(/"iss" claim/);
    await expect(verify({ iss: connection.issuer, aud: OTHER_CLIENT.client_id })).rejects.toThrow(/"aud" claim/);
  });

  it("an ID token the provider's published keys do not verify (its signature is checked, not only TLS)", async () => {
    const liarPort = await freePort();
    const made = await connect('Unverifiable', { issuer: `http://127.0.0.1:${liarPort}` });
    const liar = await startProvider({
      port: liarPort,
      keys: [signingKey()],
      publishedKeys: [publicPart(signingKey())],
      clients: [{ ...CLIENT, redirect_uris: [callbackOf(made.id)] }],
      accounts: ACCOUNTS,
    });
    try {
      expect((await signIn(t, made.id, { account: 'alice' })).error).toBe('invalid_response');
    } finally {
      await liar.stop();
    }
  });

  it('a suspended tenant: refused before the provider, and after it', async () => {
    const signedInBefore = signedIn(t, (await signIn(t, ids.byExternalId, { account: 'alice' })).token);
    const pending = await authorize(t, ids.byExternalId);
    const { atProvider } = await import('./support/oidc/provider.js');
    const back = await atProvider(String(pending.res.headers.location), callbackOf(ids.byExternalId), { account: 'alice' });
    const dto = await readTenant(t.root, a.tenant.id);
    expect((await t.root.put('/system/tenant-api', { ...writable(dto), status: '1' })).status).toBe(200);
    try {
      expect(handback(await callback(t, ids.byExternalId, back.searchParams)).searchParams.get('error')).toBe('tenant_suspended');
      expect((await signedInBefore.get('/auth/me')).status).toBe(401); // an SSO session is suspended like any other
      expect((await authorize(t, ids.byExternalId)).res.statusCode).toBe(400);
      const discovery = await t.app.inject({ method: 'GET', url: `/auth/sso/connections?tenantId=${a.tenant.tenantId}` });
      expect(discovery.json().data).toEqual({ ssoRequired: false, connections: [] });
    } finally {
      expect((await t.root.put('/system/tenant-api', { ...writable(await readTenant(t.root, a.tenant.id)), status: '0' })).status).toBe(200);
      // The disable revoked the admin's session and the tenant's API keys, as it revokes every credential of the tenant.
      a = { ...a, admin: await t.login(a.tenant.tenantId, a.username, a.password) };
      scim = await ScimClient.forTenant(a.admin);
    }
  });
});

describe('SSO required', () => {
  it("is told to the login page, refuses the tenant's users a password login, keeps its admins', and SSO still signs in", async () => {
    const user = await scim.post('/Users', { schemas: [URN.user], userName: `pw${Date.now()}`, password: 'user-password-1' });
    expect(user.status).toBe(201);
    expect((await a.admin.put(`${API}/policy/${a.tenant.tenantId}`, { ssoRequired: true })).status).toBe(200);
    try {
      expect((await a.admin.get(`${API}/policy/${a.tenant.tenantId}`)).body.data).toEqual({ ssoRequired: true });
      // The login page learns it without a token, beside the connections it offers.
      const discovery = (await t.anon.get(`/auth/sso/connections?tenantId=${a.tenant.tenantId}`)).body.data;
      expect(discovery.ssoRequired).toBe(true);
      expect(discovery.connections.map((c: any) => c.id)).toContain(ids.byExternalId);
      const refused = await t.anon.post('/auth/login', { tenantId: a.tenant.tenantId, username: user.body.userName, password: 'user-password-1' });
      expect(refused.status).toBe(403);
      expect(refused.body.msg).toMatch(/identity provider/);
      expect((await t.anon.post('/auth/login', { tenantId: a.tenant.tenantId, username: a.username, password: a.password })).status).toBe(200);
      expect((await signIn(t, ids.byExternalId, { account: 'alice' })).token!.status).toBe(200);
    } finally {
      await a.admin.put(`${API}/policy/${a.tenant.tenantId}`, { ssoRequired: false });
    }
  });
});

describe('the provider rotates its keys', () => {
  it('a token signed by a key the cached JWKS lacks is checked against the JWKS fetched again', async () => {
    expect((await signIn(t, ids.byExternalId, { account: 'alice' })).token!.status).toBe(200);
    await restartProvider([signingKey()]);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the refetch's cooldown
    expect((await signIn(t, ids.byExternalId, { account: 'alice' })).token!.status).toBe(200);
  });
});

describe('webhooks', () => {
  it('an sso.* record reaches a webhook endpoint of the tenant, signed, as the trail holds it, without the client secret', async () => {
    const receiver = await WebhookReceiver.start();
    const hook = await a.admin.post('/system/webhook-api', { url: receiver.url('/sso'), events: ['sso.*'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    try {
      const made = await connect('Announced');
      const delivered = () => receiver.received.find((r) => r.path === '/sso' && JSON.parse(r.raw.toString('utf8')).data.entityId === made.id);
      await expect.poll(delivered, { timeout: 15_000 }).toBeDefined();
      const r = delivered()!;
      const headers = {
        'webhook-id': String(r.headers['webhook-id']),
        'webhook-timestamp': String(r.headers['webhook-timestamp']),
        'webhook-signature': String(r.headers['webhook-signature']),
      };
      const body = new Webhook(hook.body.data.secret).verify(r.raw, headers) as any;
      const [record] = (await t.root.get(`/system/audit-api/list?action=sso.create&entityId=${made.id}`)).body.data.rows;
      expect(body.type).toBe('sso.create');
      expect(body.data).toEqual(record);
      expect(r.raw.toString('utf8')).not.toContain(CLIENT.client_secret);
      expect(receiver.events('/sso').every((e) => e.type.startsWith('sso.'))).toBe(true);
    } finally {
      expect((await a.admin.delete(`/system/webhook-api/${hook.body.data.id}`)).status).toBe(200);
      await receiver.close();
    }
  });
});
