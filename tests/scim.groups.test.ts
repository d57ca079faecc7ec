import { describe, expect, it } from 'vitest';
import { createTenantWithAdmin } from './support/tenant-fixtures.js';
import { URN, scimTenant } from './support/scim.js';
import { expectTreeInvariants } from './support/invariants.js';

// SCIM Groups through HTTP (docs/scim.md#groups): the tenant's departments,
// the department extension, members as the users whose department it is,
// and every department rule of the REST API, as SCIM errors.

const { group: GROUP, dept: DEPT, error: ERROR } = URN;

const { t, tenant, scim } = await scimTenant();

let seq = 0;
const name = (prefix = 'Team') => `${prefix} ${++seq}`;
async function group(displayName = name(), extra: Record<string, unknown> = {}) {
  const res = await scim.post('/Groups', { schemas: [GROUP], displayName, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}
async function user() {
  const userName = `m${++seq}.${Math.random().toString(36).slice(2, 7)}@example.com`;
  const res = await scim.post('/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; userName: string };
}
const deptOf = async (userId: string) => (await tenant.admin.get(`/system/user-api/${userId}`)).body.data.deptId as number | null;
const memberIds = (g: any) => (g.members as { value: string }[]).map((m) => m.value).sort();

describe('SCIM Groups', () => {
  it('a group is a department: created top level or under a parent, seen by the REST API with the same version', async () => {
    const top = await group('Engineering');
    expect(top).toMatchObject({ schemas: [GROUP, DEPT], displayName: 'Engineering', members: [], meta: { resourceType: 'Group' } });
    expect(top[DEPT]).toMatchObject({ parentId: null, orderNum: 0, status: '0', ancestors: '0' });
    const child = await group('Platform', { externalId: 'okta-123', [DEPT]: { parentId: top.id, orderNum: 3, leader: 'Ada' } });
    expect(child[DEPT]).toMatchObject({ parentId: top.id, orderNum: 3, leader: 'Ada', ancestors: `0,${top.id}` });
    expect(child.externalId).toBe('okta-123');

    const rest = await tenant.admin.get(`/system/dept-api/${child.id}`);
    expect(rest.body.data).toMatchObject({ deptName: 'Platform', parentId: Number(top.id), orderNum: 3, leader: 'Ada' });
    expect(rest.headers.etag).toBe(child.meta.version);
    const audit = (await tenant.admin.get(`/system/audit-api/list?action=dept.create&entityId=${child.id}`)).body.data.rows;
    expect(audit[0].userName).toBe(`apikey:${scim.keyName}`);

    const found = await scim.get(`/Groups?filter=${encodeURIComponent('displayName eq "platform"')}&excludedAttributes=members`);
    expect(found.body.totalResults).toBe(1);
    expect(found.body.Resources[0]).not.toHaveProperty('members');
    expect((await scim.get(`/Groups?filter=${encodeURIComponent('externalId eq "okta-123"')}`)).body.Resources[0].id).toBe(child.id);
  });

  it('department rules hold as SCIM errors: sibling names, cycles, disabled parents, unknown parents', async () => {
    const a = await group();
    const b = await group(name(), { [DEPT]: { parentId: a.id } });
    const dup = await scim.post('/Groups', { schemas: [GROUP], displayName: a.displayName });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ schemas: [ERROR], status: '409', scimType: 'uniqueness' });

    // Rules other than uniqueness refuse a value SCIM cannot take: 400 invalidValue.
    const cycle = await scim.patch(`/Groups/${a.id}`, [{ op: 'replace', path: `${DEPT}:parentId`, value: b.id }]);
    expect(cycle.status).toBe(400);
    expect(cycle.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidValue' });
    expect(cycle.body.detail).toContain('descendants');

    const off = await scim.patch(`/Groups/${b.id}`, [{ op: 'replace', value: { [DEPT]: { status: '1' } } }]);
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    const offParent = await scim.patch(`/Groups/${a.id}`, [{ op: 'replace', path: `${DEPT}:status`, value: '1' }]);
    expect(offParent.status).toBe(200);
    const under = await scim.post('/Groups', { schemas: [GROUP], displayName: name(), [DEPT]: { parentId: a.id } });
    expect(under.status).toBe(400);
    expect(under.body.detail).toContain('disabled');

    const other = await createTenantWithAdmin(t);
    const foreign = (await other.admin.post('/system/dept-api', { parentId: 0, deptName: 'Theirs' })).headers.location!.toString().split('/').pop();
    const elsewhere = await scim.post('/Groups', { schemas: [GROUP], displayName: name(), [DEPT]: { parentId: foreign } });
    expect(elsewhere.status).toBe(400);
    expect((await scim.get(`/Groups/${foreign}`)).status).toBe(404);
    expect((await scim.post('/Groups', { schemas: [GROUP] })).status).toBe(400);
    await expectTreeInvariants(t.sql);
  });

  it('members: add moves the user in, remove (by value path or, as Entra ID sends it, a value array) leaves it with no department', async () => {
    const g = await group();
    const other = await group();
    const [u1, u2, u3] = [await user(), await user(), await user()];

    const added = await scim.patch(`/Groups/${g.id}`, [
      { op: 'Add', path: 'members', value: [{ value: u1.id }, { value: u2.id }, { value: u3.id }] },
    ]);
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(memberIds(added.body)).toEqual([u1.id, u2.id, u3.id].sort());
    expect(await deptOf(u1.id)).toBe(Number(g.id));
    expect((await scim.get(`/Users/${u1.id}`)).body.groups).toEqual([
      expect.objectContaining({ value: g.id, display: g.displayName, type: 'direct' }),
    ]);
    expect((await scim.get(`/Users/${u1.id}`)).body['urn:ietf:params:scim:schemas:extension:enterprise:2.0:User']).toEqual({
      department: g.displayName,
    });

    const okta = await scim.patch(`/Groups/${g.id}`, [{ op: 'remove', path: `members[value eq "${u1.id}"]` }]);
    expect(memberIds(okta.body)).toEqual([u2.id, u3.id].sort());
    expect(await deptOf(u1.id)).toBeNull();
    const entra = await scim.patch(`/Groups/${g.id}`, [{ op: 'Remove', path: 'members', value: [{ value: u2.id }] }]);
    expect(memberIds(entra.body)).toEqual([u3.id]);

    // A user has one department: joining another group moves it; a later remove from the old group changes nothing.
    expect((await scim.patch(`/Groups/${other.id}`, [{ op: 'add', path: 'members', value: [{ value: u3.id }] }])).status).toBe(200);
    expect(memberIds((await scim.get(`/Groups/${g.id}`)).body)).toEqual([]);
    expect((await scim.patch(`/Groups/${g.id}`, [{ op: 'remove', path: `members[value eq "${u3.id}"]` }])).status).toBe(200);
    expect(await deptOf(u3.id)).toBe(Number(other.id));

    // replace sets the members exactly; an unknown user is refused and nothing changes.
    const replaced = await scim.patch(`/Groups/${g.id}`, [{ op: 'replace', path: 'members', value: [{ value: u1.id }] }]);
    expect(memberIds(replaced.body)).toEqual([u1.id]);
    const unknown = await scim.patch(`/Groups/${g.id}`, [{ op: 'add', path: 'members', value: [{ value: u2.id }, { value: '999999999' }] }]);
    expect(unknown.status).toBe(400);
    expect(await deptOf(u2.id)).toBeNull();
    const moves = (await tenant.admin.get(`/system/audit-api/list?action=user.update&entityId=${u1.id}`)).body.data.rows;
    expect(moves.length).toBeGreaterThanOrEqual(3);
    expect(moves[0].userName).toBe(`apikey:${scim.keyName}`);
  });

  it('takes a displayName of 100 characters (a directory group name; an emoji counts once) as the deptName, and refuses 101 with invalidValue', async () => {
    const displayName = `${`${name('Long')} ${'g'.repeat(100)}`.slice(0, 99)}😀`;
    expect([...displayName]).toHaveLength(100);
    const g = await group(displayName);
    expect(g.displayName).toBe(displayName);
    expect((await tenant.admin.get(`/system/dept-api/${g.id}`)).body.data.deptName).toBe(displayName);
    const found = await scim.get(`/Groups?filter=${encodeURIComponent(`displayName eq "${displayName}"`)}`);
    expect(found.body.Resources.map((r: any) => r.id)).toEqual([g.id]);
    for (const res of [
      await scim.post('/Groups', { schemas: [GROUP], displayName: `${displayName}x` }),
      await scim.patch(`/Groups/${g.id}`, [{ op: 'replace', path: 'displayName', value: `${displayName}x` }]),
    ]) {
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidValue' });
      expect(res.body.detail).toContain('100');
    }
  });

  it('"" for externalId clears it, on PUT and PATCH replace', async () => {
    const g = await group(name(), { externalId: 'entra-1' });
    const cleared = await scim.patch(`/Groups/${g.id}`, [{ op: 'replace', path: 'externalId', value: '' }]);
    expect(cleared.status, JSON.stringify(cleared.body)).toBe(200);
    expect(cleared.body).not.toHaveProperty('externalId');
    expect((await scim.patch(`/Groups/${g.id}`, [{ op: 'replace', value: { externalId: 'entra-2' } }])).body.externalId).toBe('entra-2');
    const put = await scim.put(`/Groups/${g.id}`, { schemas: [GROUP], displayName: g.displayName, externalId: '' });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).not.toHaveProperty('externalId');
    const [row] = await t.sql`SELECT external_id FROM sys_dept WHERE tenant_id = ${tenant.tenant.tenantId} AND dept_id = ${Number(g.id)}`;
    expect(row).toEqual({ external_id: null });
  });

  it('takes the core attributes nested under the Group schema URN, on POST and PUT; an attribute sent both ways takes the nested value', async () => {
    const u = await user();
    const parent = await group();
    const displayName = name('Nested');
    const created = await scim.post('/Groups', {
      schemas: [GROUP, DEPT],
      [GROUP]: { displayName, externalId: 'nested-1', members: [{ value: u.id }] },
      [DEPT]: { parentId: parent.id },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ displayName, externalId: 'nested-1', members: [expect.objectContaining({ value: u.id })] });
    expect(created.body[DEPT]).toMatchObject({ parentId: parent.id });
    expect(created.body).not.toHaveProperty(GROUP);
    expect(await deptOf(u.id)).toBe(Number(created.body.id));

    const put = await scim.put(`/Groups/${created.body.id}`, {
      schemas: [GROUP],
      displayName: 'Top level',
      externalId: 'top-1',
      [GROUP]: { displayName: `${displayName} renamed`, members: [] },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({ displayName: `${displayName} renamed`, externalId: 'top-1', members: [] });
    expect(put.body[DEPT]).toMatchObject({ parentId: null });
    expect(await deptOf(u.id)).toBeNull();
  });

  it('a filter longer than 2,000 characters is 400 invalidFilter', async () => {
    const res = await scim.get(`/Groups?filter=${encodeURIComponent(`displayName eq "${'a'.repeat(5000)}"`)}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidFilter' });
    expect(res.body.detail).toContain('longer than 2000 characters');
  });

  it('the depth limit holds: a group 51 levels down is refused and nothing is written', async () => {
    let parent = (await group()).id as string;
    for (let level = 2; level <= 50; level++) parent = (await group(name('Level'), { [DEPT]: { parentId: parent } })).id;
    const deeper = await scim.post('/Groups', { schemas: [GROUP], displayName: name('Too deep'), [DEPT]: { parentId: parent } });
    expect(deeper.status).toBe(400);
    expect(deeper.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidValue' });
    expect((await scim.get(`/Groups?filter=${encodeURIComponent(`displayName eq "${`Too deep ${seq}`}"`)}`)).body.totalResults).toBe(0);
  });

  it('a value path narrows replace to the members it selects; one that selects none is 400 noTarget; a bad path 400 invalidPath', async () => {
    const g = await group();
    const [u1, u2, u3] = [await user(), await user(), await user()];
    await scim.patch(`/Groups/${g.id}`, [{ op: 'add', path: 'members', value: [{ value: u1.id }, { value: u2.id }] }]);
    const swapped = await scim.patch(`/Groups/${g.id}`, [{ op: 'replace', path: `members[value eq "${u1.id}"]`, value: [{ value: u3.id }] }]);
    expect(swapped.status, JSON.stringify(swapped.body)).toBe(200);
    expect(memberIds(swapped.body)).toEqual([u2.id, u3.id].sort());
    const none = await scim.patch(`/Groups/${g.id}`, [{ op: 'replace', path: `members[value eq "${u1.id}"]`, value: [{ value: u1.id }] }]);
    expect(none.status).toBe(400);
    expect(none.body.scimType).toBe('noTarget');
    const bad = await scim.patch(`/Groups/${g.id}`, [{ op: 'replace', path: 'displayName[', value: 'x' }]);
    expect(bad.status).toBe(400);
    expect(bad.body.scimType).toBe('invalidPath');
    const shapeless = await scim.raw('PATCH', `/Groups/${g.id}`, JSON.stringify({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'] }));
    expect(shapeless.status).toBe(400);
    expect(shapeless.body.scimType).toBe('invalidSyntax');
  });

  it("a change of members alone writes the users' moves, not a department update; GET with the current version is 304", async () => {
    const g = await group();
    const u = await user();
    await scim.patch(`/Groups/${g.id}`, [{ op: 'add', path: 'members', value: [{ value: u.id }] }]);
    expect((await tenant.admin.get(`/system/audit-api/list?action=dept.update&entityId=${g.id}`)).body.data.total).toBe(0);
    expect((await tenant.admin.get(`/system/audit-api/list?action=user.update&entityId=${u.id}`)).body.data.total).toBe(1);
    const current = await scim.get(`/Groups/${g.id}`);
    const cached = await scim.raw('GET', `/Groups/${g.id}`, undefined, undefined, undefined, { 'if-none-match': current.headers.etag as string });
    expect(cached.status).toBe(304);
    // Attribute names are case-insensitive in bodies too.
    const lower = await scim.post('/Groups', { schemas: [GROUP], displayname: name('lower') });
    expect(lower.status, JSON.stringify(lower.body)).toBe(201);
  });

  it('PUT replaces the group and its members; a stale If-Match is 412', async () => {
    const g = await group();
    const u = await user();
    const put = await scim.put(
      `/Groups/${g.id}`,
      { schemas: [GROUP], displayName: `${g.displayName} renamed`, members: [{ value: u.id }] },
      g.meta.version,
    );
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.displayName).toBe(`${g.displayName} renamed`);
    expect(memberIds(put.body)).toEqual([u.id]);
    const stale = await scim.patch(`/Groups/${g.id}`, [{ op: 'replace', path: 'displayName', value: 'Late' }], g.meta.version);
    expect(stale.status).toBe(412);
  });

  it('DELETE detaches the members and deletes the department; one with a child department is refused with 409 mutability', async () => {
    const parent = await group();
    const child = await group(name(), { [DEPT]: { parentId: parent.id } });
    const refused = await scim.delete(`/Groups/${parent.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ schemas: [ERROR], scimType: 'mutability' });

    const u = await user();
    await scim.patch(`/Groups/${child.id}`, [{ op: 'add', path: 'members', value: [{ value: u.id }] }]);
    expect((await scim.delete(`/Groups/${child.id}`)).status).toBe(204);
    expect(await deptOf(u.id)).toBeNull();
    expect((await scim.get(`/Groups/${child.id}`)).status).toBe(404);
    expect((await tenant.admin.get(`/system/dept-api/${child.id}`)).status).toBe(404);
    expect((await scim.delete(`/Groups/${parent.id}`)).status).toBe(204);
    await expectTreeInvariants(t.sql);
  });
});
