import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { URN, scimTenant } from './support/scim.js';

// The request sequences Okta and Microsoft Entra ID send (docs/scim.md),
// replayed through HTTP with the bodies their documentation shows: Okta's
// SCIM 2.0 spec test and its user lifecycle and group push; Entra ID's
// provisioning sequence in its default shape (capitalised ops, "True"/"False"
// strings, member removal with a value array) and in the shape the
// aadOptscim062020 flag asks for (lower-case ops, booleans, value-path
// removal, pathless replace with dotted keys), the flag itself arriving as a
// query parameter on every request.

const { user: USER, enterprise: ENTERPRISE, group: GROUP, list: LIST } = URN;

const { tenant, scim } = await scimTenant();

const q = (filter: string) => encodeURIComponent(filter);
const random = () => Math.random().toString(36).slice(2, 10);
const restUser = async (id: string) => (await tenant.admin.get(`/system/user-api/${id}`)).body.data;

describe('Okta', () => {
  it("passes the SCIM 2.0 spec test's sequence", async () => {
    // 1. The Users endpoint answers a ListResponse.
    const first = await scim.get('/Users?count=1&startIndex=1');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ schemas: [LIST], startIndex: 1 });
    expect(Array.isArray(first.body.Resources)).toBe(true);
    // 2. A user that does not exist yet: 0 results.
    const userName = `${random()}@atko.example`;
    const none = await scim.get(`/Users?filter=${q(`userName eq "${userName}"`)}&startIndex=1&count=100`);
    expect(none.body).toMatchObject({ totalResults: 0, Resources: [] });
    // 3. Create.
    const body = {
      schemas: [USER],
      userName,
      name: { givenName: 'Randy', familyName: 'Random' },
      emails: [{ primary: true, value: userName, type: 'work' }],
      displayName: 'Randy Random',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: '1mz050nq',
      active: true,
    };
    const created = await scim.post('/Users', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ userName, active: true, name: { givenName: 'Randy', familyName: 'Random' } });
    // 4. Read it back by id, 5. by filter, and case-insensitively.
    expect((await scim.get(`/Users/${created.body.id}`)).body.userName).toBe(userName);
    for (const name of [userName, userName.toUpperCase()]) {
      const found = await scim.get(`/Users?filter=${q(`userName eq "${name}"`)}&startIndex=1&count=100`);
      expect(found.body.totalResults, name).toBe(1);
      expect(found.body.Resources[0].id).toBe(created.body.id);
    }
    // 6. The same userName again: 409. 7. An unknown id: 404.
    expect((await scim.post('/Users', body)).status).toBe(409);
    expect((await scim.get(`/Users/${randomUUID()}`)).status).toBe(404);
  });

  it('user lifecycle: profile update by PUT, deactivation and reactivation by PATCH', async () => {
    const userName = `${random()}@atko.example`;
    const created = (
      await scim.post('/Users', {
        schemas: [USER],
        userName,
        name: { givenName: 'Ann', familyName: 'Lee' },
        emails: [{ primary: true, value: userName, type: 'work' }],
        active: true,
      })
    ).body;
    const put = await scim.put(`/Users/${created.id}`, {
      schemas: [USER],
      id: created.id,
      userName,
      name: { givenName: 'Anne', familyName: 'Lee' },
      emails: [{ primary: true, value: userName, type: 'work' }],
      active: true,
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.name.givenName).toBe('Anne');
    const off = await scim.patch(`/Users/${created.id}`, [{ op: 'replace', value: { active: false } }]);
    expect(off.body.active).toBe(false);
    expect((await restUser(created.id)).status).toBe('1');
    const on = await scim.patch(`/Users/${created.id}`, [{ op: 'replace', value: { active: true } }]);
    expect(on.body.active).toBe(true);
  });

  it('group push: create with members, rename, add and remove members, delete', async () => {
    const [a, b] = [await user('okta-a'), await user('okta-b')];
    const pushed = await scim.post('/Groups', { schemas: [GROUP], displayName: 'Okta Sales', members: [{ value: a.id, display: a.userName }] });
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    expect(pushed.body.members.map((m: any) => m.value)).toEqual([a.id]);
    const id = pushed.body.id;

    expect((await scim.get(`/Groups?filter=${q('displayName eq "Okta Sales"')}&startIndex=1&count=100`)).body.totalResults).toBe(1);
    expect((await scim.get('/Groups?startIndex=1&count=100')).body.Resources.map((g: any) => g.id)).toContain(id);

    // Okta renames with a pathless replace that repeats the id.
    const renamed = await scim.patch(`/Groups/${id}`, [{ op: 'replace', value: { id, displayName: 'Okta Sales EMEA' } }]);
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    expect(renamed.body.displayName).toBe('Okta Sales EMEA');
    const added = await scim.patch(`/Groups/${id}`, [{ op: 'add', path: 'members', value: [{ value: b.id, display: b.userName }] }]);
    expect(added.body.members.map((m: any) => m.value).sort()).toEqual([a.id, b.id].sort());
    const removed = await scim.patch(`/Groups/${id}`, [{ op: 'remove', path: `members[value eq "${a.id}"]` }]);
    expect(removed.body.members.map((m: any) => m.value)).toEqual([b.id]);
    expect((await restUser(a.id)).deptId).toBeNull();
    expect((await scim.delete(`/Groups/${id}`)).status).toBe(204);
    expect((await restUser(b.id)).deptId).toBeNull();
  });
});

async function user(prefix: string) {
  const userName = `${prefix}.${random()}@example.com`;
  const res = await scim.post('/Users', { schemas: [USER], userName, active: true });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; userName: string };
}

/** Entra ID's provisioning sequence, with `flag` appended to every request as the tenant URL carries it. */
function entraSequence(shape: 'default' | 'aadOptscim062020') {
  const flag = shape === 'aadOptscim062020' ? 'aadOptscim062020=true' : '';
  const at = (path: string) => (flag ? `${path}${path.includes('?') ? '&' : '?'}${flag}` : path);
  const op = (name: 'add' | 'replace' | 'remove') => (shape === 'default' ? name[0]!.toUpperCase() + name.slice(1) : name);
  const bool = (value: boolean) => (shape === 'default' ? (value ? 'True' : 'False') : value);

  return async () => {
    const userName = `Test_User_${randomUUID()}`;
    const externalId = randomUUID();
    // Is the user there already? (by userName, and by the work address)
    expect((await scim.get(at(`/Users?filter=${q(`userName eq "${userName}"`)}`))).body.totalResults).toBe(0);
    const email = `Test_User_${randomUUID().slice(0, 8)}@testuser.com`;
    expect((await scim.get(at(`/Users?filter=${q(`emails[type eq "work"].value eq "${email}"`)}`))).body.totalResults).toBe(0);

    const created = await scim.post(at('/Users'), {
      schemas: [USER, ENTERPRISE],
      externalId,
      userName,
      active: true,
      emails: [{ primary: true, type: 'work', value: email }],
      meta: { resourceType: 'User' },
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      roles: [],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    expect(created.body).toMatchObject({ userName, externalId, displayName: 'givenName familyName', emails: [{ value: email }] });
    const byEmail = await scim.get(at(`/Users?filter=${q(`emails[type eq "work"].value eq "${email}"`)}`));
    expect(byEmail.body.Resources.map((r: any) => r.id)).toEqual([id]);

    // Multi-valued and single-valued updates.
    const multi = await scim.patch(at(`/Users/${id}`), [
      { op: op('replace'), path: 'emails[type eq "work"].value', value: 'updatedEmail@testuser.com' },
      { op: op('replace'), path: 'name.familyName', value: 'updatedFamilyName' },
    ]);
    expect(multi.status, JSON.stringify(multi.body)).toBe(200);
    expect(multi.body).toMatchObject({ emails: [{ value: 'updatedEmail@testuser.com' }], name: { familyName: 'updatedFamilyName' } });
    const newName = `${randomUUID()}@testuser.com`;
    const single = await scim.patch(at(`/Users/${id}`), [{ op: op('replace'), path: 'userName', value: newName }]);
    expect(single.body.userName).toBe(newName);
    if (shape === 'aadOptscim062020') {
      // A pathless replace whose keys are attribute paths, dotted ones included.
      const pathless = await scim.patch(at(`/Users/${id}`), [
        { op: 'replace', value: { displayName: 'New Display', 'name.givenName': 'New Given', active: true } },
      ]);
      expect(pathless.body).toMatchObject({
        displayName: 'New Display',
        name: { givenName: 'New Given', familyName: 'updatedFamilyName' },
        active: true,
      });
    }

    // Disable: the user stays, inactive, readable and filterable.
    const disabled = await scim.patch(at(`/Users/${id}`), [{ op: op('replace'), path: 'active', value: bool(false) }]);
    expect(disabled.status, JSON.stringify(disabled.body)).toBe(200);
    expect(disabled.body.active).toBe(false);
    const stillThere = await scim.get(at(`/Users?filter=${q(`userName eq "${newName}"`)}`));
    expect(stillThere.body.Resources[0]).toMatchObject({ id, active: false });

    // Groups: create, read without members, add and remove members, rename, delete.
    const member = await user('entra');
    const groupName = `Entra ${randomUUID().slice(0, 8)}`;
    const group = await scim.post(at('/Groups'), {
      schemas: [GROUP],
      externalId: randomUUID(),
      displayName: groupName,
      meta: { resourceType: 'Group' },
      members: [],
    });
    expect(group.status, JSON.stringify(group.body)).toBe(201);
    const gid = group.body.id as string;
    const lean = await scim.get(at(`/Groups/${gid}?excludedAttributes=members`));
    expect(lean.body).not.toHaveProperty('members');
    expect(lean.body.displayName).toBe(groupName);
    const listed = await scim.get(at(`/Groups?excludedAttributes=members&filter=${q(`displayName eq "${groupName}"`)}`));
    expect(listed.body.Resources.map((g: any) => g.id)).toEqual([gid]);
    expect(listed.body.Resources[0]).not.toHaveProperty('members');

    const add = await scim.patch(at(`/Groups/${gid}`), [
      {
        op: op('add'),
        path: 'members',
        value: [
          { $ref: null, value: member.id },
          { $ref: null, value: id },
        ],
      },
    ]);
    expect(add.status, JSON.stringify(add.body)).toBe(200);
    expect((await restUser(member.id)).deptId).toBe(Number(gid));
    const isMember = await scim.get(at(`/Groups?filter=${q(`id eq "${gid}" and members[value eq "${member.id}"]`)}&excludedAttributes=members`));
    expect(isMember.body.totalResults).toBe(1);
    const remove =
      shape === 'default'
        ? [{ op: 'Remove', path: 'members', value: [{ $ref: null, value: member.id }] }]
        : [{ op: 'remove', path: `members[value eq "${member.id}"]` }];
    const removed = await scim.patch(at(`/Groups/${gid}`), remove);
    expect(removed.body.members.map((m: any) => m.value)).toEqual([id]);
    expect((await restUser(member.id)).deptId).toBeNull();
    const renamed = await scim.patch(at(`/Groups/${gid}`), [{ op: op('replace'), path: 'displayName', value: `${groupName} updated` }]);
    expect(renamed.body.displayName).toBe(`${groupName} updated`);
    expect((await scim.delete(at(`/Groups/${gid}`))).status).toBe(204);
    expect((await restUser(id)).deptId).toBeNull();

    // Delete the user: 204, then 404.
    expect((await scim.delete(at(`/Users/${id}`))).status).toBe(204);
    expect((await scim.get(at(`/Users/${id}`))).status).toBe(404);
  };
}

describe('Microsoft Entra ID', () => {
  it('the default shape: capitalised ops, "True"/"False" strings, member removal with a value array', entraSequence('default'));
  it(
    'the aadOptscim062020 shape: lower-case ops, booleans, value-path removal, pathless replace with dotted keys',
    entraSequence('aadOptscim062020'),
  );
});
