import { describe, expect, it } from 'vitest';
import { Client, createdId, secondNode } from './support/app.js';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';
import { ScimClient, URN, scimTenant, type ScimReply } from './support/scim.js';

// SCIM Users through HTTP (docs/scim.md#users): the tenant's users, for an
// admin API key of that tenant; create, read, filter, page, project,
// replace, patch, delete, ETags, SCIM errors, the audit trail, and what
// refuses a caller. Okta's and Entra ID's own request sequences:
// tests/scim.providers.test.ts.

const { user: USER, error: ERROR } = URN;

const { t, tenant, scim } = await scimTenant();

let seq = 0;
const uniqueName = (prefix = 'user') => `${prefix}${++seq}.${Math.random().toString(36).slice(2, 7)}@example.com`;
const userBody = (userName: string, extra: Record<string, unknown> = {}) => ({
  schemas: [USER],
  userName,
  name: { givenName: 'Ada', familyName: 'Lovelace' },
  displayName: 'Ada L',
  emails: [{ value: userName, type: 'work', primary: true }],
  active: true,
  externalId: `ext-${userName}`,
  ...extra,
});

describe('SCIM Users', () => {
  it('creates a user (201, Location, ETag) that the REST API and the audit trail see as the same user', async () => {
    const userName = uniqueName();
    const res = await scim.post(
      '/Users',
      userBody(userName, { password: 'a-long-password-1', phoneNumbers: [{ value: '+1 555 0100', type: 'work' }] }),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/scim\+json/);
    const user = res.body;
    expect(user).toMatchObject({
      schemas: expect.arrayContaining([USER]),
      userName,
      displayName: 'Ada L',
      name: { givenName: 'Ada', familyName: 'Lovelace' },
      emails: [{ value: userName, type: 'work', primary: true }],
      phoneNumbers: [{ value: '+1 555 0100', type: 'work' }],
      active: true,
      externalId: `ext-${userName}`,
      groups: [],
      meta: { resourceType: 'User' },
    });
    expect(user).not.toHaveProperty('password');
    expect(res.headers.location).toBe(user.meta.location);
    expect(user.meta.location).toMatch(new RegExp(`/scim/v2/Users/${user.id}$`));
    expect(res.headers.etag).toBe(user.meta.version);
    expect(user.meta.created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);

    // The same user through REST, with the same version; its password works; the audit record names the key.
    const rest = await tenant.admin.get(`/system/user-api/${user.id}`);
    expect(rest.body.data).toMatchObject({ userName, nickName: 'Ada L', email: userName, phonenumber: '+1 555 0100', status: '0', roles: ['user'] });
    expect(rest.headers.etag).toBe(user.meta.version);
    const login = await t.anon.post('/auth/login', { tenantId: tenant.tenant.tenantId, username: userName, password: 'a-long-password-1' });
    expect(login.status).toBe(200);
    const audit = (await tenant.admin.get(`/system/audit-api/list?action=user.create&entityId=${user.id}`)).body.data.rows;
    expect(audit[0]).toMatchObject({ userName: `apikey:${scim.keyName}`, tenantId: tenant.tenant.tenantId });
  });

  it('a user created without a password cannot log in with one', async () => {
    const userName = uniqueName('nopw');
    expect((await scim.post('/Users', userBody(userName))).status).toBe(201);
    for (const password of ['', '!', 'anything-at-all']) {
      const login = await t.anon.post('/auth/login', { tenantId: tenant.tenant.tenantId, username: userName, password });
      expect(login.status).not.toBe(200);
    }
  });

  it('takes a 100-character userName and a 254-character email, and refuses longer ones with invalidValue', async () => {
    const long = `${'a'.repeat(88)}@example.com`;
    expect(long).toHaveLength(100);
    const email = `${'b'.repeat(242)}@example.com`;
    expect(email).toHaveLength(254);
    const created = await scim.post('/Users', userBody(long, { emails: [{ value: email, type: 'work' }] }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await tenant.admin.get(`/system/user-api/${created.body.id}`)).body.data.email).toBe(email);
    for (const body of [userBody(`x${long}`), userBody(uniqueName(), { emails: [{ value: `c${email}`, type: 'work' }] })]) {
      const res = await scim.post('/Users', body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidValue' });
    }
  });

  it('takes a displayName of 100 characters (a directory display name; an emoji counts once) as the nickName, and refuses 101 with invalidValue', async () => {
    const displayName = `${'d'.repeat(99)}😀`;
    expect([...displayName]).toHaveLength(100);
    const created = await scim.post('/Users', userBody(uniqueName(), { displayName }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.displayName).toBe(displayName);
    expect((await tenant.admin.get(`/system/user-api/${created.body.id}`)).body.data.nickName).toBe(displayName);
    const longer = `${displayName}d`;
    for (const res of [
      await scim.post('/Users', userBody(uniqueName(), { displayName: longer })),
      await scim.patch(`/Users/${created.body.id}`, [{ op: 'replace', path: 'displayName', value: longer }]),
    ]) {
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidValue' });
      expect(res.body.detail).toContain('100');
    }
    expect((await scim.get(`/Users/${created.body.id}`)).body.displayName).toBe(displayName);
  });

  it('a duplicate userName, in any case, is 409 uniqueness; a missing one 400', async () => {
    const userName = uniqueName();
    const first = await scim.post('/Users', userBody(userName));
    expect(first.status).toBe(201);
    for (const again of [userName, userName.toUpperCase()]) {
      const res = await scim.post('/Users', userBody(again));
      expect(res.status, again).toBe(409);
      expect(res.body).toMatchObject({ schemas: [ERROR], status: '409', scimType: 'uniqueness' });
    }
    const other = (await scim.post('/Users', userBody(uniqueName()))).body;
    const renamed = await scim.patch(`/Users/${other.id}`, [{ op: 'replace', path: 'userName', value: userName.toUpperCase() }]);
    expect(renamed.status).toBe(409);
    // Attribute names are case-insensitive (RFC 7643 §2.1).
    expect((await scim.post('/Users', { schemas: [USER], USERNAME: uniqueName('caps') })).status).toBe(201);
    const missing = await scim.post('/Users', { schemas: [USER], displayName: 'Nobody' });
    expect(missing.status).toBe(400);
    expect(missing.body.status).toBe('400');
  });

  it('filters (userName case-insensitively), pages from startIndex 1, and 200 with totalResults 0 when nothing matches', async () => {
    const names = [uniqueName('page'), uniqueName('page'), uniqueName('page')];
    const ids: string[] = [];
    for (const name of names) ids.push((await scim.post('/Users', userBody(name))).body.id);

    const one = await scim.get(`/Users?filter=${encodeURIComponent(`userName eq "${names[1]!.toUpperCase()}"`)}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: 1,
      startIndex: 1,
      itemsPerPage: 1,
    });
    expect(one.body.Resources[0].id).toBe(ids[1]);

    const none = await scim.get(`/Users?filter=${encodeURIComponent('userName eq "nobody@nowhere.example"')}`);
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({ totalResults: 0, Resources: [] });

    const page = await scim.get(`/Users?filter=${encodeURIComponent('userName sw "page"')}&startIndex=2&count=1`);
    expect(page.body).toMatchObject({ totalResults: 3, startIndex: 2, itemsPerPage: 1 });
    expect(page.body.Resources[0].id).toBe(ids[1]);
    const counted = await scim.get(`/Users?filter=${encodeURIComponent('userName sw "page"')}&count=0`);
    expect(counted.body).toMatchObject({ totalResults: 3, itemsPerPage: 0, Resources: [] });

    const byExternal = await scim.get(`/Users?filter=${encodeURIComponent(`externalId eq "ext-${names[2]}"`)}`);
    expect(byExternal.body.Resources.map((r: any) => r.id)).toEqual([ids[2]]);
  });

  it('refuses a filter it cannot read with 400 invalidFilter, never as SQL', async () => {
    const userName = uniqueName();
    await scim.post('/Users', userBody(userName));
    for (const filter of [
      'userName eq "x" or 1 eq 1',
      'password_hash pr',
      "userName eq \"a' OR '1'='1\"",
      'userName eq',
      '(userName eq "x"',
      'title eq "x"',
    ]) {
      const res = await scim.get(`/Users?filter=${encodeURIComponent(filter)}`);
      if (res.status === 200) {
        expect(res.body.totalResults, filter).toBe(0);
      } else {
        expect(res.status, filter).toBe(400);
        expect(res.body, filter).toMatchObject({ schemas: [ERROR], scimType: 'invalidFilter' });
      }
    }
  });

  it('a filter longer than 2,000 characters is 400 invalidFilter, from the filter parser, not the query schema', async () => {
    const filter = `userName eq "${'a'.repeat(5000 - 'userName eq ""'.length)}"`;
    expect(filter).toHaveLength(5000);
    const res = await scim.get(`/Users?filter=${encodeURIComponent(filter)}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidFilter' });
    expect(res.body.detail).toContain('longer than 2000 characters');
  });

  it('keeps the work phone and email apart from mobile, home and fax entries', async () => {
    const created = (
      await scim.post(
        '/Users',
        userBody(uniqueName(), {
          phoneNumbers: [
            { value: '+1 555 0001', type: 'mobile' },
            { value: '+1 555 0002', type: 'work' },
          ],
          emails: [{ value: 'home@example.com', type: 'home' }],
        }),
      )
    ).body;
    expect(created.phoneNumbers).toEqual([{ value: '+1 555 0002', type: 'work' }]);
    expect(created.emails).toEqual([]);
    const mobile = await scim.patch(`/Users/${created.id}`, [
      { op: 'Add', path: 'phoneNumbers[type eq "mobile"].value', value: '+1 555 0003' },
      { op: 'Remove', path: 'phoneNumbers[type eq "fax"]' },
      { op: 'replace', path: 'emails[type eq "home"].value', value: 'other@example.com' },
    ]);
    expect(mobile.status, JSON.stringify(mobile.body)).toBe(200);
    expect(mobile.body.phoneNumbers).toEqual([{ value: '+1 555 0002', type: 'work' }]);
    expect(mobile.body.emails).toEqual([]);
    const work = await scim.patch(`/Users/${created.id}`, [{ op: 'replace', path: 'phoneNumbers[type eq "work"].value', value: '+1 555 0004' }]);
    expect(work.body.phoneNumbers).toEqual([{ value: '+1 555 0004', type: 'work' }]);
  });

  it('attributes and excludedAttributes shape the answer; id, schemas and meta stay', async () => {
    const created = (await scim.post('/Users', userBody(uniqueName()))).body;
    const repeated = await scim.get(`/Users/${created.id}?attributes=userName&attributes=displayName`);
    expect(repeated.status).toBe(200);
    expect(Object.keys(repeated.body).sort()).toEqual(['displayName', 'id', 'meta', 'schemas', 'userName']);
    const dotted = await scim.get(`/Users/${created.id}?excludedAttributes=name.givenName`);
    expect(dotted.body.name).toEqual({ familyName: 'Lovelace', formatted: 'Ada L' });
    const extension = await scim.get(`/Users/${created.id}?attributes=urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department`);
    expect(Object.keys(extension.body)).toContain('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User');
    const cached = await scim.raw('GET', `/Users/${created.id}`, undefined, undefined, undefined, { 'if-none-match': created.meta.version });
    expect(cached.status).toBe(304);
    expect(cached.headers.etag).toBe(created.meta.version);
    const answered = await scim.raw('POST', '/Users?attributes=userName', JSON.stringify(userBody(uniqueName())));
    expect(Object.keys(answered.body).sort()).toEqual(['id', 'meta', 'schemas', 'userName']);
    const only = await scim.get(`/Users/${created.id}?attributes=userName,name.givenName`);
    expect(Object.keys(only.body).sort()).toEqual(['id', 'meta', 'name', 'schemas', 'userName']);
    expect(only.body.name).toEqual({ givenName: 'Ada' });
    const without = await scim.get(`/Users?filter=${encodeURIComponent(`id eq "${created.id}"`)}&excludedAttributes=emails,groups`);
    expect(without.body.Resources[0]).not.toHaveProperty('emails');
    expect(without.body.Resources[0]).not.toHaveProperty('groups');
    expect(without.body.Resources[0]).toHaveProperty('userName');
  });

  it('PUT replaces; PATCH changes what it names; If-Match with a stale version is 412', async () => {
    const created = (await scim.post('/Users', userBody(uniqueName()))).body;
    const put = await scim.put(
      `/Users/${created.id}`,
      userBody(created.userName, { displayName: 'Replaced', name: { givenName: 'Grace' }, emails: [] }),
    );
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({ displayName: 'Replaced', name: { givenName: 'Grace' }, emails: [] });
    expect(put.body.name).not.toHaveProperty('familyName');
    expect(put.body.meta.version).not.toBe(created.meta.version);

    const stale = await scim.patch(`/Users/${created.id}`, [{ op: 'replace', path: 'displayName', value: 'Late' }], created.meta.version);
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ schemas: [ERROR], status: '412' });

    const patched = await scim.patch(
      `/Users/${created.id}`,
      [
        { op: 'replace', path: 'name.familyName', value: 'Hopper' },
        { op: 'add', path: 'emails[type eq "work"].value', value: 'grace@example.com' },
        { op: 'replace', value: { displayName: 'Grace H', 'name.givenName': 'G.' } },
      ],
      put.body.meta.version,
    );
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      displayName: 'Grace H',
      name: { givenName: 'G.', familyName: 'Hopper' },
      emails: [{ value: 'grace@example.com' }],
    });

    const removed = await scim.patch(`/Users/${created.id}`, [{ op: 'remove', path: 'emails' }]);
    expect(removed.body.emails).toEqual([]);
    const noUserName = await scim.patch(`/Users/${created.id}`, [{ op: 'remove', path: 'userName' }]);
    expect(noUserName.status).toBe(400);
    const badOp = await scim.patch(`/Users/${created.id}`, [{ op: 'move', path: 'userName', value: 'x' }]);
    expect(badOp.status).toBe(400);
    expect(badOp.body.scimType).toBe('invalidSyntax');
  });

  it('"" for the work email, the work phone or externalId clears it, on PUT and PATCH replace (as Microsoft\'s SCIM validator sends it)', async () => {
    const userName = uniqueName();
    const full = userBody(userName, { phoneNumbers: [{ value: '+1 555 0100', type: 'work' }] });
    const created = (await scim.post('/Users', full)).body;
    const expectCleared = async (res: ScimReply) => {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ userName, emails: [], phoneNumbers: [] });
      expect(res.body).not.toHaveProperty('externalId');
      expect((await tenant.admin.get(`/system/user-api/${created.id}`)).body.data).toMatchObject({ email: null, phonenumber: null });
      const [row] = await t.sql`SELECT external_id FROM sys_user WHERE tenant_id = ${tenant.tenant.tenantId} AND user_id = ${Number(created.id)}`;
      expect(row).toEqual({ external_id: null });
    };

    await expectCleared(
      await scim.patch(`/Users/${created.id}`, [
        { op: 'replace', path: 'emails[type eq "work"].value', value: '' },
        { op: 'replace', path: 'phoneNumbers[type eq "work"].value', value: '' },
        { op: 'replace', path: 'externalId', value: '' },
      ]),
    );
    expect((await scim.put(`/Users/${created.id}`, full)).body).toMatchObject({ emails: [{ value: userName }], externalId: `ext-${userName}` });
    await expectCleared(
      await scim.patch(`/Users/${created.id}`, [
        {
          op: 'replace',
          value: { externalId: '', emails: [{ value: '', type: 'work', primary: true }], phoneNumbers: [{ value: '', type: 'work' }] },
        },
      ]),
    );
    expect((await scim.put(`/Users/${created.id}`, full)).status).toBe(200);
    await expectCleared(
      await scim.put(
        `/Users/${created.id}`,
        userBody(userName, { emails: [{ value: '', type: 'work', primary: true }], phoneNumbers: [{ value: '', type: 'work' }], externalId: '' }),
      ),
    );
  });

  it('takes the core attributes nested under the User schema URN, on POST and PUT; an attribute sent both ways takes the nested value', async () => {
    const userName = uniqueName('nested');
    const nested = (attributes: Record<string, unknown>, top: Record<string, unknown> = {}) => ({ schemas: [USER], ...top, [USER]: attributes });
    const core = {
      userName,
      name: { givenName: 'Nested', familyName: 'Core' },
      displayName: 'Nested Core',
      emails: [{ value: userName, type: 'work', primary: true }],
      externalId: `ext-${userName}`,
      active: true,
    };
    const created = await scim.post('/Users', nested(core));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject(core);
    expect(created.body).not.toHaveProperty(USER);
    expect((await tenant.admin.get(`/system/user-api/${created.body.id}`)).body.data).toMatchObject({
      userName,
      nickName: 'Nested Core',
      email: userName,
    });

    const put = await scim.put(
      `/Users/${created.body.id}`,
      nested({ userName, displayName: 'Nested wins', active: false }, { displayName: 'Top level', name: { givenName: 'Top' } }),
    );
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    // PUT replaces: what neither form sends returns to its default; the top-level name is kept where the nested form is silent.
    expect(put.body).toMatchObject({ userName, displayName: 'Nested wins', active: false, name: { givenName: 'Top' }, emails: [] });
    expect(put.body).not.toHaveProperty('externalId');

    const notObject = await scim.post('/Users', { schemas: [USER], userName: uniqueName(), [USER]: 'userName' });
    expect(notObject.status).toBe(400);
    expect(notObject.body).toMatchObject({ schemas: [ERROR], scimType: 'invalidValue' });
  });

  it("deactivating ends the user's sessions and keeps it readable and filterable; DELETE is 204, then 404", async () => {
    const userName = uniqueName();
    const created = (await scim.post('/Users', userBody(userName, { password: 'a-long-password-1' }))).body;
    const session = await t.login(tenant.tenant.tenantId, userName, 'a-long-password-1');
    expect((await session.get('/system/dept-api/list')).status).toBe(200);

    const off = await scim.patch(`/Users/${created.id}`, [{ op: 'Replace', path: 'active', value: 'False' }]);
    expect(off.status).toBe(200);
    expect(off.body.active).toBe(false);
    expect((await session.get('/system/dept-api/list')).status).toBe(401);
    const inactive = await scim.get(`/Users?filter=${encodeURIComponent(`userName eq "${userName}" and active eq false`)}`);
    expect(inactive.body.totalResults).toBe(1);

    const deleted = await scim.delete(`/Users/${created.id}`);
    expect(deleted.status).toBe(204);
    expect((await scim.get(`/Users/${created.id}`)).status).toBe(404);
    expect((await scim.delete(`/Users/${created.id}`)).status).toBe(404);
    expect((await scim.get('/Users/not-a-number')).status).toBe(404);
  });
});

describe('paging', () => {
  it('answers at most 200 resources a page, reads startIndex below 1 as 1 and a negative count as 0', async () => {
    const big = await createTenantWithAdmin(t);
    const bigScim = await ScimClient.forTenant(big.admin);
    // Written directly, as another program might: 201 users besides the admin.
    await t.sql`
      INSERT INTO sys_user (tenant_id, user_name, role, password_hash, create_by)
      SELECT ${big.tenant.tenantId}, 'bulk' || g, 'user', '!', 'test' FROM generate_series(1, 201) g`;
    const capped = await bigScim.get('/Users?count=500');
    expect(capped.body).toMatchObject({ totalResults: 202, startIndex: 1, itemsPerPage: 200 });
    expect(capped.body.Resources).toHaveLength(200);
    const ids = capped.body.Resources.map((r: any) => Number(r.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    const rest = await bigScim.get('/Users?startIndex=201&count=500');
    expect(rest.body).toMatchObject({ startIndex: 201, itemsPerPage: 2 });
    expect((await bigScim.get('/Users?startIndex=0&count=1')).body).toMatchObject({ startIndex: 1, itemsPerPage: 1 });
    expect((await bigScim.get('/Users?count=-5')).body).toMatchObject({ totalResults: 202, itemsPerPage: 0, Resources: [] });
  });
});

describe('the tenant account quota', () => {
  it('a create past accountCount is 400 invalidValue and writes nothing; deleting a user frees a place', async () => {
    const small = await createTenantWithAdmin(t, t.root, { accountCount: 2 });
    const smallScim = await ScimClient.forTenant(small.admin);
    const first = await smallScim.post('/Users', userBody(uniqueName()));
    expect(first.status).toBe(201);
    const over = await smallScim.post('/Users', userBody(uniqueName()));
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidValue' });
    expect(over.body.detail).toContain('quota');
    expect((await smallScim.get('/Users')).body.totalResults).toBe(2);
    expect((await smallScim.delete(`/Users/${first.body.id}`)).status).toBe(204);
    expect((await smallScim.post('/Users', userBody(uniqueName()))).status).toBe(201);
  });
});

describe('who may call SCIM', () => {
  it('only an admin API key of the tenant, and only for its own tenant', async () => {
    const other = await createTenantWithAdmin(t);
    const otherScim = await ScimClient.forTenant(other.admin);
    const mine = (await scim.post('/Users', userBody(uniqueName()))).body;
    expect((await otherScim.get(`/Users/${mine.id}`)).status).toBe(404);
    expect((await otherScim.get('/Users')).body.Resources.map((r: any) => r.id)).not.toContain(mine.id);

    const personal = await new ScimClient(tenant.admin).get('/Users');
    expect(personal.status).toBe(403);
    expect(personal.body).toMatchObject({ schemas: [ERROR], status: '403' });
    const userKey = await ScimClient.forTenant(tenant.admin, 'user');
    expect((await userKey.get('/Users')).status).toBe(403);
    const nobody = await new ScimClient(new Client(t.app)).get('/Users');
    expect(nobody.status).toBe(401);
    expect(nobody.body).toMatchObject({ schemas: [ERROR], status: '401' });

    const revoked = await ScimClient.forTenant(tenant.admin);
    expect((await tenant.admin.delete(`/system/apikey-api/${revoked.keyId}`)).status).toBe(200);
    expect((await revoked.get('/Users')).status).toBe(401);
  });

  it('takes application/scim+json and plain JSON, answers unknown paths with a SCIM 404, and bounds the body', async () => {
    const plain = await scim.post('/Users', userBody(uniqueName()), 'application/json');
    expect(plain.status).toBe(201);
    const withCharset = await scim.post('/Users', userBody(uniqueName()), 'application/scim+json; charset=utf-8');
    expect(withCharset.status).toBe(201);
    const unknown = await scim.get('/Nothing');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ schemas: [ERROR], status: '404' });
    const huge = await scim.post('/Users', userBody(uniqueName(), { displayName: 'x'.repeat(2 * 1024 * 1024) }));
    expect(huge.status).toBe(413);
    const broken = await scim.raw('POST', '/Users', '{"userName": ', 'application/scim+json');
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({ schemas: [ERROR], scimType: 'invalidSyntax' });
  });
});

describe('PUBLIC_URL (docs/operations.md#configuration)', () => {
  it('is the base of every URL SCIM hands out, behind a proxy that ends TLS; the REST API keeps its relative Location', async () => {
    const user = (await scim.post('/Users', userBody(uniqueName()))).body;
    // Without it, the URLs are the request's own: behind a TLS proxy that is http://.
    expect(user.meta.location).toMatch(new RegExp(`^http://[^/]+/scim/v2/Users/${user.id}$`));

    const base = 'https://idm.example.com/people';
    const node = await secondNode(t, { config: { jwtSecret: undefined, tokenTtl: 7200, logLevel: 'silent', publicUrl: base } });
    try {
      const proxied = new ScimClient(new Client(node.app, scim.as.token));
      const behindProxy = { host: 'app-7.internal:8080', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'idm.example.com' };
      const created = await proxied.raw('POST', '/Users', JSON.stringify(userBody(uniqueName())), undefined, undefined, behindProxy);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.headers.location).toBe(`${base}/scim/v2/Users/${created.body.id}`);
      expect(created.body.meta.location).toBe(`${base}/scim/v2/Users/${created.body.id}`);

      const group = await proxied.raw(
        'POST',
        '/Groups',
        JSON.stringify({ schemas: [URN.group], displayName: `Proxied ${created.body.id}`, members: [{ value: created.body.id }] }),
        undefined,
        undefined,
        behindProxy,
      );
      expect(group.status, JSON.stringify(group.body)).toBe(201);
      expect(group.headers.location).toBe(`${base}/scim/v2/Groups/${group.body.id}`);
      expect(group.body.meta.location).toBe(`${base}/scim/v2/Groups/${group.body.id}`);
      expect(group.body.members).toEqual([expect.objectContaining({ $ref: `${base}/scim/v2/Users/${created.body.id}` })]);
      const read = await proxied.get(`/Users/${created.body.id}`);
      expect(read.body.groups).toEqual([expect.objectContaining({ $ref: `${base}/scim/v2/Groups/${group.body.id}` })]);
      const listed = await proxied.get(`/Groups?filter=${encodeURIComponent(`id eq "${group.body.id}"`)}`);
      expect(listed.body.Resources[0].meta.location).toBe(`${base}/scim/v2/Groups/${group.body.id}`);
      expect((await proxied.get('/ServiceProviderConfig')).body.meta.location).toBe(`${base}/scim/v2/ServiceProviderConfig`);
      expect((await proxied.get('/Schemas')).body.Resources.map((r: any) => r.meta.location)).toContain(`${base}/scim/v2/Schemas/${URN.user}`);

      // The REST API's creates answer the new resource's path, relative as before.
      const rest = await new Client(node.app, scim.as.token).post('/system/dept-api', { parentId: 0, deptName: `Rest ${created.body.id}` });
      expect(rest.headers.location).toBe(`/system/dept-api/${createdId(rest)}`);
    } finally {
      await node.close();
    }
  });
});
