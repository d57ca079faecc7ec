import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../src/db/database.js';
import { GROUP_FILTER_ATTRIBUTES, USER_FILTER_ATTRIBUTES } from '../src/scim/scim.attributes.js';
import { ScimError } from '../src/scim/scim.error.js';
import { parseFilter } from '../src/scim/scim.filter.js';
import { filterToSql, type FilterAttributes } from '../src/scim/scim.filter.where.js';
import { openTestDatabase, type TestDatabase } from './support/test-database.js';

// SCIM filters (RFC 7644 §3.4.2.2) evaluated on a real database: rows are
// inserted as the app stores them, each filter runs as the SCIM routes will
// run it (tenant first, then the fragment), and the names it finds are
// compared with the expected ones. The statements go through the app's pool,
// so on PostgreSQL the run's tenant-filter check (docs/scale-out.md) judges
// them too.

let db: TestDatabase;
let sql: Sql;
let tenant: string;
let otherTenant: string;
const userIds: Record<string, number> = {};
const deptIds: Record<string, number> = {};

interface UserRow {
  user_name: string;
  dept?: string;
  nick_name?: string;
  email?: string | null;
  status?: '0' | '1';
  del_flag?: '0' | '2';
  given_name?: string | null;
  family_name?: string | null;
  external_id?: string | null;
  create_time?: string;
  update_time?: string | null;
}

const USERS: UserRow[] = [
  {
    user_name: 'alice',
    dept: 'Sales',
    nick_name: 'Alice Smith',
    email: 'alice@example.com',
    given_name: 'Alice',
    family_name: 'Smith',
    external_id: 'ext-A1',
    create_time: '2024-01-10T00:00:00Z',
    update_time: '2024-06-01T12:00:00Z',
  },
  {
    user_name: 'Bob',
    dept: 'Sales',
    nick_name: 'Bob Jones',
    email: 'BOB@Example.org',
    status: '1',
    given_name: 'Bob',
    family_name: 'Jones',
    external_id: 'EXT-b2',
    create_time: '2024-02-10T00:00:00Z',
  },
  { user_name: 'carol', dept: 'Engineering', family_name: 'Smith-Jones', create_time: '2024-03-10T00:00:00Z', update_time: '2024-03-11T00:00:00Z' },
  { user_name: 'bjensen', nick_name: 'Babs Jensen', email: 'bjensen@example.com', given_name: 'Barbara', family_name: "O'Malley" },
  { user_name: "o'neil", email: 'oneil@example.net' },
  { user_name: 'x"y' },
  { user_name: 'pct%user' },
  { user_name: 'under_score' },
  { user_name: 'back\\slash' },
  // Deleted: the routes leave it out, and it is no group's member.
  { user_name: 'zed', dept: 'Ghost', del_flag: '2' },
];
/** Sorted by lower-cased code units, so expectations read alphabetically whatever the case. */
const sorted = (names: string[]) => [...names].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0));
const ALL = sorted(USERS.filter((u) => u.del_flag !== '2').map((u) => u.user_name));
const but = (...names: string[]) => ALL.filter((n) => !names.includes(n));

async function insertTenant(name: string): Promise<string> {
  const [row] = await sql<{ tenantId: string }[]>`
    INSERT INTO sys_tenant (tenant_parent, ancestors, company_name, contact_user_name, contact_phone)
    VALUES ('000000', '000000', ${name}, 'Contact', '13800138000') RETURNING tenant_id AS "tenantId"`;
  return row!.tenantId;
}

async function insertDept(tenantId: string, parentId: number, ancestors: string, deptName: string, more: Record<string, unknown> = {}) {
  const [row] = await sql<{ id: number }[]>`
    INSERT INTO sys_dept ${sql({ tenant_id: tenantId, parent_id: parentId, ancestors, dept_name: deptName, ...more })} RETURNING dept_id AS id`;
  return row!.id;
}

beforeAll(async () => {
  db = await openTestDatabase();
  sql = db.sql;
  tenant = await insertTenant(`SCIM filter ${Math.random().toString(36).slice(2, 10)}`);
  otherTenant = await insertTenant(`SCIM other ${Math.random().toString(36).slice(2, 10)}`);
  const root = await insertDept(tenant, 0, '0', 'Head office');
  deptIds['Head office'] = root;
  deptIds.Sales = await insertDept(tenant, root, `0,${root}`, 'Sales', { external_id: 'grp-1', create_time: '2024-01-01T00:00:00Z' });
  deptIds.Engineering = await insertDept(tenant, root, `0,${root}`, 'Engineering', {
    create_time: '2024-01-01T00:00:00Z',
    update_time: '2024-05-01T00:00:00Z',
  });
  deptIds.Ghost = await insertDept(tenant, root, `0,${root}`, 'Ghost');
  for (const { dept, ...u } of USERS) {
    const row = { tenant_id: tenant, dept_id: dept ? deptIds[dept]! : null, role: 'user', password_hash: '-', ...u };
    const [inserted] = await sql<{ id: number }[]>`INSERT INTO sys_user ${sql(row)} RETURNING user_id AS id`;
    userIds[u.user_name] = inserted!.id;
  }
  // The same names in another tenant: never found, since the statement names the tenant.
  const otherRoot = await insertDept(otherTenant, 0, '0', 'Sales');
  await sql`INSERT INTO sys_user ${sql({ tenant_id: otherTenant, dept_id: otherRoot, user_name: 'alice', email: 'alice@example.com', role: 'user', password_hash: '-' })}`;
});

afterAll(async () => {
  await db?.close();
});

/** The names of the tenant's live users the filter finds, sorted. */
async function users(filter: string): Promise<string[]> {
  const app = db.appSql;
  const rows = await app<{ name: string }[]>`
    SELECT u.user_name AS name FROM sys_user u
    WHERE u.tenant_id = ${tenant} AND u.del_flag = '0' AND (${filterToSql(app, parseFilter(filter), USER_FILTER_ATTRIBUTES)})`;
  return sorted(rows.map((r) => r.name));
}

/** The names of the tenant's live departments (Groups) the filter finds, sorted. */
async function groups(filter: string): Promise<string[]> {
  const app = db.appSql;
  const rows = await app<{ name: string }[]>`
    SELECT g.dept_name AS name FROM sys_dept g
    WHERE g.tenant_id = ${tenant} AND g.del_flag = '0' AND (${filterToSql(app, parseFilter(filter), GROUP_FILTER_ATTRIBUTES)})`;
  return sorted(rows.map((r) => r.name));
}

/** The ScimError a filter is refused with, parsed and translated (no statement runs). */
function refusal(filter: string, attributes: FilterAttributes = USER_FILTER_ATTRIBUTES): ScimError {
  try {
    // Built, never run: a fragment is sent only when a statement holding it is awaited.
    void filterToSql(sql, parseFilter(filter), attributes);
  } catch (err) {
    if (err instanceof ScimError) return err;
    throw err;
  }
  throw new Error(`accepted: ${filter}`);
}

function expectInvalid(filter: string, detail?: RegExp, attributes?: FilterAttributes): void {
  const err = refusal(filter, attributes);
  expect({ status: err.status, scimType: err.scimType }, filter).toEqual({ status: 400, scimType: 'invalidFilter' });
  if (detail) expect(err.detail, filter).toMatch(detail);
}

describe('SCIM filter: string operators', () => {
  it('eq, ne, co, sw, ew on userName ignore case in the value (userName is caseExact false)', async () => {
    expect(await users('userName eq "ALICE"')).toEqual(['alice']);
    expect(await users('userName eq "bob"')).toEqual(['Bob']);
    expect(await users('userName ne "alice"')).toEqual(but('alice'));
    expect(await users('userName co "L"')).toEqual(['alice', 'back\\slash', 'carol', "o'neil"]);
    expect(await users('userName sw "B"')).toEqual(['back\\slash', 'bjensen', 'Bob']);
    expect(await users('userName ew "OL"')).toEqual(['carol']);
    expect(await users('userName eq "nobody"')).toEqual([]);
  });

  it('gt, ge, lt, le order strings lexically, case-insensitively', async () => {
    expect(await users('userName gt "carol"')).toEqual(["o'neil", 'pct%user', 'under_score', 'x"y']);
    expect(await users('userName ge "carol"')).toEqual(['carol', "o'neil", 'pct%user', 'under_score', 'x"y']);
    expect(await users('userName lt "BOB"')).toEqual(['alice', 'back\\slash', 'bjensen']);
    expect(await users('userName le "bob"')).toEqual(['alice', 'back\\slash', 'bjensen', 'Bob']);
  });

  it('externalId is case-exact', async () => {
    expect(await users('externalId eq "ext-A1"')).toEqual(['alice']);
    expect(await users('externalId eq "EXT-A1"')).toEqual([]);
    expect(await users('externalId sw "EXT"')).toEqual(['Bob']);
    expect(await users('externalId ne "ext-A1"')).toEqual(but('alice'));
  });

  it('displayName and the name parts map to their columns', async () => {
    expect(await users('displayName co "smith"')).toEqual(['alice']);
    expect(await users('name.givenName eq "barbara"')).toEqual(['bjensen']);
    expect(await users('name.familyName sw "smith"')).toEqual(['alice', 'carol']);
  });
});

describe('SCIM filter: names and keywords ignore case', () => {
  it('attribute names, operators and and/or/not in any case', async () => {
    expect(await users('USERNAME EQ "alice"')).toEqual(['alice']);
    expect(await users('UserName Eq "alice" OR username eQ "carol"')).toEqual(['alice', 'carol']);
    expect(await users('NAME.FAMILYNAME co "jones" AnD Not (userName Eq "bob")')).toEqual(['carol']);
    expect(await users('EMAILS[TYPE eq "work" and VALUE co "@example.org"]')).toEqual(['Bob']);
    expect(await users('userName Pr and Active EQ TRUE and userName sw "a"')).toEqual(['alice']);
  });

  it('schema-qualified paths: the core schema URN in any case', async () => {
    expect(await users('urn:ietf:params:scim:schemas:core:2.0:User:userName eq "alice"')).toEqual(['alice']);
    expect(
      await users(
        'URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:USER:name.familyName co "MALLEY" or urn:ietf:params:scim:schemas:core:2.0:User:emails co "net"',
      ),
    ).toEqual(['bjensen', "o'neil"]);
    expect(await groups('urn:ietf:params:scim:schemas:core:2.0:Group:displayName eq "sales"')).toEqual(['Sales']);
  });

  it('an attribute of another schema, or of an extension with no column here, is an unknown attribute', () => {
    expect(parseFilter('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "Sales"')).toMatchObject({ op: 'eq' });
    expectInvalid('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "Sales"', /enterprise:2\.0:User:department/);
    expectInvalid('urn:ietf:params:scim:schemas:core:2.0:Group:userName eq "alice"', /Unknown attribute/);
    expectInvalid('urn:ietf:params:scim:schemas:core:2.0:User:members pr', /Unknown attribute/, GROUP_FILTER_ATTRIBUTES);
  });
});

describe('SCIM filter: logic', () => {
  it('and binds tighter than or; parentheses regroup', async () => {
    // alice or (Bob and active): Bob is disabled.
    expect(await users('userName eq "alice" or userName eq "bob" and active eq true')).toEqual(['alice']);
    expect(await users('userName eq "bob" and active eq true or userName eq "alice"')).toEqual(['alice']);
    expect(await users('(userName eq "alice" or userName eq "bob") and active eq false')).toEqual(['Bob']);
    expect(await users('userName eq "alice" or (userName eq "bob" and active eq false)')).toEqual(['alice', 'Bob']);
  });

  it('not binds tighter than and', async () => {
    expect(await users('not (userName sw "a") and name.familyName co "smith"')).toEqual(['carol']);
    expect(await users('not (userName sw "a" and name.familyName co "smith")')).toEqual(but('alice'));
    expect(await users('not (not (userName eq "alice"))')).toEqual(['alice']);
    expect(await users('((((userName eq "alice"))))')).toEqual(['alice']);
  });

  it('ne and not on a missing value: no value is "not equal", so ne is exactly not (eq)', async () => {
    const noEmail = ['back\\slash', 'carol', 'pct%user', 'under_score', 'x"y'];
    expect(await users('emails.value ne "alice@example.com"')).toEqual(but('alice'));
    expect(await users('not (emails.value eq "alice@example.com")')).toEqual(but('alice'));
    expect(await users('not (emails pr)')).toEqual(noEmail);
    expect(await users('emails eq null')).toEqual(noEmail);
    expect(await users('emails.value ne null')).toEqual(but(...noEmail));
    expect(await users('name.givenName ne "Alice"')).toEqual(but('alice'));
    // A NULL never turns a whole `not (... or ...)` unknown: the ones with no family name are in.
    expect(await users('not (name.familyName co "smith" or name.familyName eq "jones")')).toEqual(but('alice', 'carol', 'Bob'));
  });
});

describe('SCIM filter: multi-valued attributes and value paths', () => {
  it('emails: the one work address; emails and emails.value are the same column', async () => {
    const withEmail = ['alice', 'bjensen', 'Bob', "o'neil"];
    expect(await users('emails[type eq "work"]')).toEqual(withEmail);
    expect(await users('emails[type eq "home"]')).toEqual([]);
    expect(await users('emails.type eq "work"')).toEqual(withEmail);
    expect(await users('emails.type ne "work"')).toEqual(but(...withEmail));
    expect(await users('emails[type eq "work" and value co "@example.com"]')).toEqual(['alice', 'bjensen']);
    expect(await users('emails[value ew ".ORG"]')).toEqual(['Bob']);
    expect(await users('emails[not (value co "example.com")]')).toEqual(['Bob', "o'neil"]);
    expect(await users('emails co "example.com"')).toEqual(['alice', 'bjensen']);
    expect(await users('emails.value co "example.com"')).toEqual(['alice', 'bjensen']);
  });

  it('Groups: members are the live users of the department, tested on one member at a time', async () => {
    const { alice, Bob: bob, carol, zed } = userIds as Record<string, number>;
    expect(await groups(`members[value eq "${alice}"]`)).toEqual(['Sales']);
    expect(await groups(`members.value eq "${carol}"`)).toEqual(['Engineering']);
    expect(await groups(`members eq "${bob}"`)).toEqual(['Sales']);
    expect(await groups('members pr')).toEqual(['Engineering', 'Sales']);
    // Ghost's one user is deleted: it has no members.
    expect(await groups('not (members pr)')).toEqual(['Ghost', 'Head office']);
    expect(await groups(`members[value eq "${zed}"]`)).toEqual([]);
    expect(await groups(`members.value ne "${alice}"`)).toEqual(['Engineering', 'Ghost', 'Head office']);
    // One member cannot be two users; two value filters can each find one.
    expect(await groups(`members[value eq "${alice}" and value eq "${bob}"]`)).toEqual([]);
    expect(await groups(`members[value eq "${alice}"] and members[value eq "${bob}"]`)).toEqual(['Sales']);
    expect(await groups(`members[value eq "${alice}" or value eq "${carol}"]`)).toEqual(['Engineering', 'Sales']);
    expect(await groups('members[value eq "abc"]')).toEqual([]);
  });

  it('Groups: id, externalId, displayName (case-insensitive) and meta', async () => {
    expect(await groups(`id eq "${deptIds.Engineering}"`)).toEqual(['Engineering']);
    expect(await groups('externalId eq "grp-1"')).toEqual(['Sales']);
    expect(await groups('externalId pr')).toEqual(['Sales']);
    expect(await groups('displayName eq "SALES" or displayName sw "eng"')).toEqual(['Engineering', 'Sales']);
    expect(await groups('meta.lastModified ge "2024-05-01T00:00:00Z"')).toEqual(['Engineering', 'Ghost', 'Head office']);
    expect(await groups('meta.created lt "2024-02-01T00:00:00Z"')).toEqual(['Engineering', 'Sales']);
  });

  it('reads Entra ID\'s emails[type eq "work"].value eq "..." as one value meeting both', async () => {
    expect(await users('emails[type eq "work"].value eq "ALICE@example.com"')).toEqual(['alice']);
    expect(await users('emails[type eq "home"].value eq "alice@example.com"')).toEqual([]);
    expect(await users('emails[type eq "work"].value pr')).toEqual(await users('emails[type eq "work"]'));
  });

  it('refuses value paths on other attributes, unknown sub-attributes, nesting and a sub-attribute without a comparison', () => {
    expectInvalid('userName[value eq "x"]', /not a multi-valued attribute/);
    expectInvalid('emails[primary eq true]', /Unknown attribute "emails\.primary"/);
    expectInvalid('emails[type eq "work"].value[type eq "x"]', /Unknown operator|an operator/);
    expectInvalid('emails[value[type eq "work"] pr]', /do not nest/);
    expectInvalid('members[display eq "alice"]', /members\.display/, GROUP_FILTER_ATTRIBUTES);
  });
});

describe('SCIM filter: pr, booleans, dateTimes, ids', () => {
  it('pr: present and, for strings, not empty', async () => {
    expect(await users('displayName pr')).toEqual(['alice', 'bjensen', 'Bob']);
    expect(await users('name.givenName pr')).toEqual(['alice', 'bjensen', 'Bob']);
    expect(await users('externalId pr')).toEqual(['alice', 'Bob']);
    expect(await users('emails pr')).toEqual(['alice', 'bjensen', 'Bob', "o'neil"]);
    expect(await users('emails.value pr')).toEqual(['alice', 'bjensen', 'Bob', "o'neil"]);
    for (const all of ['id pr', 'userName pr', 'active pr', 'meta.created pr', 'meta.lastModified pr']) expect(await users(all), all).toEqual(ALL);
  });

  it('booleans: eq and ne with true/false, or the strings "True"/"False" in any case', async () => {
    expect(await users('active eq false')).toEqual(['Bob']);
    expect(await users('active eq "False"')).toEqual(['Bob']);
    expect(await users('active eq "FALSE"')).toEqual(['Bob']);
    expect(await users('active eq FALSE')).toEqual(['Bob']);
    expect(await users('active ne true')).toEqual(['Bob']);
    expect(await users('active eq "True"')).toEqual(but('Bob'));
    expect(await users('active ne "false"')).toEqual(but('Bob'));
    for (const op of ['co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le']) expectInvalid(`active ${op} true`, /boolean/);
    expectInvalid('active eq "yes"', /true or false/);
    expectInvalid('active eq 1', /true or false/);
  });

  it('dateTimes: ordered by instant, written in any zone', async () => {
    expect(await users('meta.lastModified eq "2024-06-01T12:00:00Z"')).toEqual(['alice']);
    expect(await users('meta.lastModified eq "2024-06-01T14:00:00+02:00"')).toEqual(['alice']);
    expect(await users('meta.lastModified eq "2024-06-01T12:00:00.000"')).toEqual(['alice']);
    expect(await users('meta.lastModified ne "2024-06-01T12:00:00Z"')).toEqual(but('alice'));
    // Bob was never updated: his lastModified is his creation.
    expect(await users('meta.lastModified gt "2024-02-01T00:00:00Z" and meta.lastModified lt "2024-03-01T00:00:00Z"')).toEqual(['Bob']);
    expect(await users('meta.lastModified le "2024-03-11T00:00:00Z"')).toEqual(['Bob', 'carol']);
    expect(await users('meta.created ge "2024-03-10T00:00:00Z" and meta.created lt "2024-12-31T00:00:00Z"')).toEqual(['carol']);
    expect(await users('meta.created lt "2024-01-10T00:00:00.001Z"')).toEqual(['alice']);
  });

  it('dateTimes: anything but an ISO 8601 date-time, or co/sw/ew, is invalidFilter', () => {
    for (const bad of ['"yesterday"', '"2024-02-30T00:00:00Z"', '"2024-13-01T00:00:00Z"', '"2024-06-01"', '"2024-06-01T25:00:00Z"', '5', 'true']) {
      expectInvalid(`meta.lastModified gt ${bad}`, /dateTime/);
    }
    expectInvalid('meta.created co "2024"', /co, sw and ew/);
  });

  it('ids: the decimal id; a literal that is no id of ours matches nothing', async () => {
    const { alice, carol } = userIds as Record<string, number>;
    expect(await users(`id eq "${alice}"`)).toEqual(['alice']);
    expect(await users(`id eq ${carol}`)).toEqual(['carol']);
    expect(await users(`id eq "${alice}" or id eq "${carol}"`)).toEqual(['alice', 'carol']);
    expect(await users(`id ne "${alice}"`)).toEqual(but('alice'));
    for (const none of ['"abc"', '"0"', `"0${alice}"`, `" ${alice}"`, '"99999999999999999999"', '"-1"', '""']) {
      expect(await users(`id eq ${none}`), none).toEqual([]);
    }
    expect(await users('id ne "abc"')).toEqual(ALL);
    // Other operators take the id as the case-exact string it is.
    expect(await users(`id sw "${alice}" and id ew "${alice}"`)).toEqual(['alice']);
    expectInvalid('id eq true', /string/);
  });

  it('string attributes take strings; null only with eq and ne', () => {
    expectInvalid('userName eq 12', /quoted string/);
    expectInvalid('userName eq true', /quoted string/);
    expectInvalid('userName co null', /only eq and ne/);
  });
});

describe('SCIM filter: the examples of RFC 7644 §3.4.2.2', () => {
  it('those on attributes stored here', async () => {
    expect(await users('userName eq "bjensen"')).toEqual(['bjensen']);
    expect(await users(`name.familyName co "O'Malley"`)).toEqual(['bjensen']);
    expect(await users('userName sw "J"')).toEqual([]);
    expect(await users('urn:ietf:params:scim:schemas:core:2.0:User:userName sw "J"')).toEqual([]);
    expect(await users('userName sw "bj"')).toEqual(['bjensen']);
    expect(await users('meta.lastModified gt "2011-05-13T04:42:34Z"')).toEqual(ALL);
    expect(await users('meta.lastModified ge "2011-05-13T04:42:34Z"')).toEqual(ALL);
    expect(await users('meta.lastModified lt "2011-05-13T04:42:34Z"')).toEqual([]);
    expect(await users('meta.lastModified le "2011-05-13T04:42:34Z"')).toEqual([]);
    expect(await users('emails co "example.com" or emails.value co "example.org"')).toEqual(['alice', 'bjensen', 'Bob']);
    expect(await users('emails[type eq "work" and value co "@example.com"]')).toEqual(['alice', 'bjensen']);
    expect(await users('not (emails co "example.com" or emails.value co "example.org")')).toEqual(but('alice', 'bjensen', 'Bob'));
  });

  it('those on attributes not stored here are refused, naming the attribute', () => {
    expectInvalid('title pr', /"title"/);
    expectInvalid('title pr and userType eq "Employee"', /"title"/);
    expectInvalid('userType eq "Employee" and (emails.type eq "work")', /"userType"/);
    expectInvalid('emails[type eq "work" and value co "@example.com"] or ims[type eq "xmpp" and value co "@foo.com"]', /"ims"/);
    expectInvalid('schemas eq "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"', /"schemas"/);
  });
});

describe('SCIM filter: hostile input', () => {
  it('literals are bound parameters: quotes match only names that contain them', async () => {
    expect(await users(`userName eq "o'neil"`)).toEqual(["o'neil"]);
    expect(await users(`userName co "'"`)).toEqual(["o'neil"]);
    expect(await users(`name.familyName co "'"`)).toEqual(['bjensen']);
    expect(await users('userName co "\\""')).toEqual(['x"y']);
    expect(await users('userName eq "X\\"Y"')).toEqual(['x"y']);
    expect(await users(`userName eq "a' OR '1'='1"`)).toEqual([]);
    expect(await users(`userName eq "x\\"; DROP TABLE sys_user; --"`)).toEqual([]);
    expect(await users('userName eq "\\u0027 OR 1=1 --"')).toEqual([]);
    const [row] = await sql<{ count: number }[]>`SELECT count(*)::int AS count FROM sys_user WHERE tenant_id = ${tenant}`;
    expect(row!.count).toBe(USERS.length);
  });

  it("the statement's text never holds a literal", async () => {
    const fragment = filterToSql(sql, parseFilter(`userName eq "o'neil" or emails co "x%_\\\\y" or id eq "7"`), USER_FILTER_ATTRIBUTES);
    const described = await sql`SELECT 1 FROM sys_user u WHERE u.tenant_id = ${tenant} AND (${fragment})`.describe();
    expect(described.string).not.toMatch(/neil|x%_|'7'/);
    expect(described.types.length).toBeGreaterThanOrEqual(4);
  });

  it('%, _ and \\ match themselves, never as wildcards', async () => {
    expect(await users('userName co "%"')).toEqual(['pct%user']);
    expect(await users('userName co "_"')).toEqual(['under_score']);
    expect(await users('userName co "\\\\"')).toEqual(['back\\slash']);
    expect(await users('userName sw "%"')).toEqual([]);
    expect(await users('userName ew "_"')).toEqual([]);
    expect(await users('userName eq "_____"')).toEqual([]);
    expect(await users('userName eq "%"')).toEqual([]);
  });

  it('SQL-shaped filters are syntax errors, not queries', () => {
    expectInvalid('userName eq "x" or 1 eq 1', /"1" at position 19 is not an attribute path/);
    expectInvalid('userName eq "x" or 1=1', /not an attribute path/);
    expectInvalid("userName eq 'x'", /not a value/);
    expectInvalid('userName eq x; DROP TABLE sys_user', /not a value/);
    expectInvalid('userName eq "x" -- comment', /Unexpected "--"/);
    expectInvalid('user_name eq "alice"', /Unknown attribute "user_name"/);
    expectInvalid('u.user_name eq "alice"', /Unknown attribute/);
    expectInvalid('password_hash pr', /Unknown attribute "password_hash"/);
  });

  it('unbalanced brackets and quotes, missing parts, bad escapes', () => {
    expectInvalid('(userName eq "a"', /Expected "\)" at the end/);
    expectInvalid('userName eq "a")', /Unexpected "\)"/);
    expectInvalid('emails[type eq "work"', /Expected "\]" at the end/);
    expectInvalid('emails type eq "work"]', /Unknown operator "type"/);
    expectInvalid('userName eq "abc', /Unterminated string/);
    expectInvalid('userName eq "abc\\"', /Unterminated string/);
    expectInvalid('userName eq "bad \\q escape"', /JSON strings/);
    expectInvalid('userName', /operator/);
    expectInvalid('userName eq', /Expected a value at the end/);
    expectInvalid('userName xx "a"', /Unknown operator "xx"/);
    expectInvalid('and userName eq "a"', /Unknown operator/);
    expectInvalid('userName eq "a" and', /Expected an attribute path at the end/);
    expectInvalid('userName eq "a" userName eq "b"', /Unexpected "userName"/);
    expectInvalid('not userName eq "a"', /Unknown operator "userName"/);
    expectInvalid('()', /attribute path/);
    expectInvalid('', /empty/);
    expectInvalid('   ', /empty/);
  });

  it('too long, too deep, too many comparisons: invalidFilter; up to each limit: accepted', async () => {
    const longest = `userName eq "${'a'.repeat(2000 - 'userName eq ""'.length)}"`;
    expect(longest).toHaveLength(2000);
    expect(await users(longest)).toEqual([]);
    expectInvalid(`${longest} `, /longer than 2000/);

    const nest = (depth: number) => `${'('.repeat(depth)}userName eq "alice"${')'.repeat(depth)}`;
    expect(await users(nest(20))).toEqual(['alice']);
    expectInvalid(nest(21), /deeper than 20/);
    expect(await users(`${'not ('.repeat(20)}userName eq "alice"${')'.repeat(20)}`)).toEqual(['alice']);
    expectInvalid(`${'not ('.repeat(21)}userName eq "alice"${')'.repeat(21)}`, /deeper than 20/);
    expectInvalid(`${'('.repeat(900)}userName eq "alice"${')'.repeat(900)}`, /deeper than 20/);
    expectInvalid(`emails[${'('.repeat(20)}value pr${')'.repeat(20)}]`, /deeper than 20/);

    const terms = (n: number) => Array.from({ length: n }, (_, i) => `userName eq "u${i}"`).join(' or ');
    expect(await users(`${terms(49)} or userName eq "carol"`)).toEqual(['carol']);
    expectInvalid(`${terms(50)} or userName eq "carol"`, /more than 50 comparisons/);
  });
});
