import { describe, expect, it } from 'vitest';
import { Client, createdId } from './support/app.js';
import { ScimClient, URN, scimTenant } from './support/scim.js';

// SCIM discovery through HTTP (docs/scim.md#discovery): /ServiceProviderConfig,
// /ResourceTypes and /Schemas say what the service does, and the User schema
// declares every attribute a real user is answered with (walked key by key,
// so the schema and scim.users.routes.ts cannot drift apart).

const CHARACTERISTICS = ['name', 'type', 'multiValued', 'description', 'required', 'caseExact', 'mutability', 'returned', 'uniqueness'];

const { user: USER, enterprise: ENTERPRISE, group: GROUP, dept: DEPT, list: LIST, error: ERROR } = URN;

const { t, tenant, scim } = await scimTenant();

const expectScim = (res: { status: number; headers: Record<string, unknown> }, status = 200) => {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/scim\+json/);
};

interface Attribute {
  name: string;
  type: string;
  multiValued: boolean;
  subAttributes?: Attribute[];
  [characteristic: string]: unknown;
}

/** Every key of `value` is declared in `attributes`, with the type and multiValued the value really has. */
function expectDeclared(value: Record<string, unknown>, attributes: Attribute[], where: string): void {
  for (const [key, item] of Object.entries(value)) {
    const declared = attributes.find((a) => a.name.toLowerCase() === key.toLowerCase());
    expect(declared, `${where}${key} is declared`).toBeDefined();
    const attribute = declared!;
    expect(attribute.multiValued, `${where}${key} multiValued`).toBe(Array.isArray(item));
    for (const one of Array.isArray(item) ? item : [item]) {
      if (attribute.type === 'complex') {
        expect(typeof one, `${where}${key} is complex`).toBe('object');
        expectDeclared(one as Record<string, unknown>, attribute.subAttributes ?? [], `${where}${key}.`);
      } else {
        const js = { string: 'string', reference: 'string', boolean: 'boolean', integer: 'number', dateTime: 'string' }[attribute.type];
        expect(typeof one, `${where}${key} is ${attribute.type}`).toBe(js);
      }
    }
  }
}

describe('SCIM discovery', () => {
  it('ServiceProviderConfig says what the service supports', async () => {
    const res = await scim.get('/ServiceProviderConfig');
    expectScim(res);
    expect(res.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
      patch: { supported: true },
      bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
      filter: { supported: true, maxResults: 200 },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: true },
      authenticationSchemes: [{ type: 'oauthbearertoken', primary: true }],
      meta: { resourceType: 'ServiceProviderConfig' },
    });
    expect(res.body.authenticationSchemes).toHaveLength(1);
    expect(res.body.authenticationSchemes[0].name).toEqual(expect.any(String));
    expect(res.body.authenticationSchemes[0].description).toMatch(/admin.*POST \/system\/apikey-api/);
    expect(res.body.meta.location).toMatch(/^http:\/\/[^/]+\/scim\/v2\/ServiceProviderConfig$/);

    // The advertised maximum is the one paging applies.
    const page = await scim.get('/Users?count=100000');
    expect(page.status).toBe(200);
    expect(page.body.itemsPerPage).toBeLessThanOrEqual(200);
  });

  it('ResourceTypes lists User and Group, each readable by name', async () => {
    const res = await scim.get('/ResourceTypes');
    expectScim(res);
    expect(res.body).toMatchObject({ schemas: [LIST], totalResults: 2, startIndex: 1, itemsPerPage: 2 });
    const expected = {
      User: { endpoint: '/Users', schema: USER, schemaExtensions: [{ schema: ENTERPRISE, required: false }] },
      Group: { endpoint: '/Groups', schema: GROUP, schemaExtensions: [{ schema: DEPT, required: false }] },
    };
    expect(res.body.Resources.map((r: any) => r.id)).toEqual(['User', 'Group']);
    for (const [name, shape] of Object.entries(expected)) {
      const listed = res.body.Resources.find((r: any) => r.id === name);
      expect(listed).toMatchObject({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
        id: name,
        name,
        ...shape,
        meta: { resourceType: 'ResourceType' },
      });
      expect(listed.meta.location).toMatch(new RegExp(`/scim/v2/ResourceTypes/${name}$`));
      const one = await scim.get(`/ResourceTypes/${name}`);
      expectScim(one);
      expect(one.body).toEqual(listed);
    }
  });

  it('Schemas lists the four schemas with every characteristic of every attribute, each readable by its URN', async () => {
    const res = await scim.get('/Schemas');
    expectScim(res);
    expect(res.body).toMatchObject({ schemas: [LIST], totalResults: 4, startIndex: 1, itemsPerPage: 4 });
    expect(res.body.Resources.map((s: any) => s.id)).toEqual([USER, ENTERPRISE, GROUP, DEPT]);
    const walk = (attributes: Attribute[], where: string) => {
      for (const a of attributes) {
        for (const c of CHARACTERISTICS) expect(a, `${where}${a.name}.${c}`).toHaveProperty(c);
        if (a.type === 'complex') {
          expect(a.subAttributes?.length, `${where}${a.name} has subAttributes`).toBeGreaterThan(0);
          walk(a.subAttributes!, `${where}${a.name}.`);
        } else expect(a).not.toHaveProperty('subAttributes');
        if (a.type === 'reference') expect(a.referenceTypes, `${where}${a.name}.referenceTypes`).toEqual(expect.any(Array));
      }
    };
    for (const schema of res.body.Resources) {
      expect(schema).toMatchObject({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'], meta: { resourceType: 'Schema' } });
      expect(schema.meta.location).toMatch(new RegExp(`/scim/v2/Schemas/${schema.id}$`));
      walk(schema.attributes, `${schema.id}:`);
      const one = await scim.get(`/Schemas/${schema.id}`);
      expectScim(one);
      expect(one.body).toEqual(schema);
    }

    const byName = (id: string) => Object.fromEntries(res.body.Resources.find((s: any) => s.id === id).attributes.map((a: Attribute) => [a.name, a]));
    const user = byName(USER);
    expect(Object.keys(user).sort()).toEqual(
      ['id', 'externalId', 'userName', 'name', 'displayName', 'emails', 'phoneNumbers', 'active', 'password', 'groups'].sort(),
    );
    expect(user.userName).toMatchObject({ required: true, caseExact: false, uniqueness: 'server' });
    expect(user.password).toMatchObject({ mutability: 'writeOnly', returned: 'never' });
    expect(user.groups).toMatchObject({ mutability: 'readOnly', multiValued: true });
    expect(user.emails.subAttributes.map((a: Attribute) => a.name)).toEqual(['value', 'type', 'primary']);
    expect(user.phoneNumbers.subAttributes.map((a: Attribute) => a.name)).toEqual(['value', 'type']);
    expect(user.active.type).toBe('boolean');
    expect(Object.keys(byName(ENTERPRISE))).toEqual(['department']);
    expect(byName(ENTERPRISE).department.mutability).toBe('readOnly');
    const group = byName(GROUP);
    expect(Object.keys(group)).toEqual(['id', 'externalId', 'displayName', 'members']);
    expect(group.displayName.required).toBe(true);
    expect(group.members).toMatchObject({ multiValued: true, type: 'complex' });
    const dept = byName(DEPT);
    expect(Object.keys(dept)).toEqual(['parentId', 'orderNum', 'leader', 'phone', 'email', 'status', 'ancestors']);
    expect(dept.orderNum.type).toBe('integer');
    expect(dept.status.canonicalValues).toEqual(['0', '1']);
    expect(dept.ancestors.mutability).toBe('readOnly');

    // A URN is matched whatever its case.
    expect((await scim.get(`/Schemas/${USER.toLowerCase()}`)).body.id).toBe(USER);
  });

  it('the User schema declares every attribute a real user is answered with', async () => {
    const userName = `disc.${Math.random().toString(36).slice(2, 8)}@example.com`;
    const created = await scim.post('/Users', {
      schemas: [USER],
      userName,
      externalId: `ext-${userName}`,
      name: { givenName: 'Ada', familyName: 'Lovelace' },
      displayName: 'Ada L',
      emails: [{ value: userName, type: 'work', primary: true }],
      phoneNumbers: [{ value: '+1 555 0100', type: 'work' }],
      active: true,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // In a department, so that groups and the enterprise department are answered too.
    const deptId = createdId(await tenant.admin.post('/system/dept-api', { deptName: `disc-${userName.slice(5, 11)}`, parentId: 0 }));
    const rest = (await tenant.admin.get(`/system/user-api/${created.body.id}`)).body.data;
    const moved = await tenant.admin.put('/system/user-api', { ...rest, deptId });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    const user = (await scim.get(`/Users/${created.body.id}`)).body;
    for (const key of ['externalId', 'name', 'displayName', 'emails', 'phoneNumbers', 'active', 'groups', ENTERPRISE]) {
      expect(user, key).toHaveProperty([key]);
    }
    expect(user.groups).toHaveLength(1);
    expect(user.name.formatted).toBe('Ada L');

    const schemas = (await scim.get('/Schemas')).body.Resources;
    const attributesOf = (urn: string) => schemas.find((s: any) => s.id === urn).attributes as Attribute[];
    const { schemas: declaredSchemas, meta, ...core } = user;
    // schemas and meta are common to every resource (RFC 7643 §3.1), not attributes of a schema.
    expect(declaredSchemas).toEqual([USER, ENTERPRISE]);
    expect(meta).toMatchObject({ resourceType: 'User' });
    const extension = core[ENTERPRISE];
    delete core[ENTERPRISE];
    expectDeclared(core, attributesOf(USER), '');
    expectDeclared(extension, attributesOf(ENTERPRISE), `${ENTERPRISE}:`);
    // The schema declares nothing readable that a user is never answered with (password is returned never).
    const readable = attributesOf(USER).filter((a) => a.returned !== 'never');
    expect(readable.map((a) => a.name).sort()).toEqual(Object.keys(core).sort());
  });

  it('unknown ids are SCIM 404s; a filter is refused with 403', async () => {
    for (const path of ['/ResourceTypes/Nope', '/ResourceTypes/Users', '/Schemas/urn:ietf:params:scim:schemas:core:2.0:Nope', '/Schemas/x']) {
      const res = await scim.get(path);
      expectScim(res, 404);
      expect(res.body).toMatchObject({ schemas: [ERROR], status: '404' });
    }
    for (const path of ['/ServiceProviderConfig', '/ResourceTypes', '/Schemas']) {
      const res = await scim.get(`${path}?filter=${encodeURIComponent('id eq "User"')}`);
      expectScim(res, 403);
      expect(res.body).toMatchObject({ schemas: [ERROR], status: '403' });
    }
  });

  it("who may call: an admin API key only; a person's token or a user-role key is 403, no credential 401", async () => {
    const userKey = await ScimClient.forTenant(tenant.admin, 'user');
    for (const path of ['/ServiceProviderConfig', '/ResourceTypes', `/ResourceTypes/User`, '/Schemas', `/Schemas/${USER}`]) {
      const personal = await new ScimClient(tenant.admin).get(path);
      expectScim(personal, 403);
      expect(personal.body).toMatchObject({ schemas: [ERROR], status: '403' });
      expectScim(await userKey.get(path), 403);
      const nobody = await new ScimClient(new Client(t.app)).get(path);
      expectScim(nobody, 401);
      expect(nobody.body).toMatchObject({ schemas: [ERROR], status: '401' });
    }
  });
});
