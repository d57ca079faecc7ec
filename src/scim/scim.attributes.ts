import type { Db } from '../db/database.js';
import type { FilterAttribute } from './scim.compare.js';
import type { FilterAttributes } from './scim.filter.where.js';

// What a SCIM filter may name, and where each is stored: the allowlist
// filterToSql (scim.filter.where.ts) takes its columns from. Users are sys_user
// rows under the alias `u`, Groups are departments, sys_dept rows under `g`.
// Attribute names are lower-cased (RFC 7643 §2.1: case-insensitive).

const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:user';
const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:group';

/** Each attribute under its bare name and under its schema URN (`urn:...:User:userName`, RFC 7644 §3.10). */
const withSchema = (urn: string, attributes: FilterAttributes): FilterAttributes => ({
  ...attributes,
  ...Object.fromEntries(Object.entries(attributes).map(([name, a]) => [`${urn}:${name}`, a])),
});

const column =
  (type: FilterAttribute['type'], caseExact: boolean) =>
  (expression: (sql: Db) => ReturnType<FilterAttribute['column']>): FilterAttribute => ({ type, caseExact, column: expression });
const id = column('id', true);
/** RFC 7643 §4.1 and §4.2 make userName, displayName, names and emails case-insensitive; externalId case-exact (§3.1). */
const text = column('string', false);
const exactText = column('string', true);
const dateTime = column('dateTime', true);
const boolean = column('boolean', true);

export const USER_FILTER_ATTRIBUTES: FilterAttributes = withSchema(USER_SCHEMA, {
  id: id((sql) => sql`u.user_id`),
  externalid: exactText((sql) => sql`u.external_id`),
  username: text((sql) => sql`u.user_name`),
  displayname: text((sql) => sql`u.nick_name`),
  'name.givenname': text((sql) => sql`u.given_name`),
  'name.familyname': text((sql) => sql`u.family_name`),
  // status '0' is enabled, '1' disabled (docs/api-rules.md).
  active: boolean((sql) => sql`(u.status = '0')`),
  // A user has at most one email, its work address: `emails` has a value exactly when the column is set.
  emails: {
    subAttributes: {
      value: text((sql) => sql`u.email`),
      type: text((sql) => sql`'work'::text`),
    },
    some: (sql, condition) => sql`(u.email IS NOT NULL AND u.email <> '' AND ${condition})`,
  },
  // A user never updated was last modified when it was created.
  'meta.lastmodified': dateTime((sql) => sql`coalesce(u.update_time, u.create_time)`),
  'meta.created': dateTime((sql) => sql`u.create_time`),
});

export const GROUP_FILTER_ATTRIBUTES: FilterAttributes = withSchema(GROUP_SCHEMA, {
  id: id((sql) => sql`g.dept_id`),
  externalid: exactText((sql) => sql`g.external_id`),
  displayname: text((sql) => sql`g.dept_name`),
  // A department's members are its live users. u2.tenant_id = g.tenant_id keeps the subquery in the
  // group's tenant, so the statement still touches one tenant only (docs/scale-out.md).
  members: {
    subAttributes: {
      value: id((sql) => sql`u2.user_id`),
    },
    some: (sql, condition) => sql`EXISTS (
      SELECT 1 FROM sys_user u2
      WHERE u2.tenant_id = g.tenant_id AND u2.dept_id = g.dept_id AND u2.del_flag = '0' AND ${condition})`,
  },
  'meta.lastmodified': dateTime((sql) => sql`coalesce(g.update_time, g.create_time)`),
  'meta.created': dateTime((sql) => sql`g.create_time`),
});
