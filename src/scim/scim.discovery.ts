import { DEPT_NAME_MAX, NICK_NAME_MAX, USER_NAME_MAX } from '../core/limits.js';
import { MAX_RESULTS } from './scim.resource.js';
import { ENTERPRISE_USER_SCHEMA, USER_SCHEMA } from './scim.user.state.js';
import { DEPT_EXTENSION, GROUP_SCHEMA } from './scim.group.state.js';

// What the service says about itself at /scim/v2 (RFC 7644 §4,
// docs/scim.md#discovery): its features (/ServiceProviderConfig), the
// resource types it serves (/ResourceTypes) and their attributes (/Schemas).
// Providers read these to decide what to send, so each document must say
// what the service really does: the User schema lists exactly what
// scim.users.routes.ts answers and scim.user.state.ts reads, no more
// (tests/scim.discovery.test.ts walks a real user against it).

const SERVICE_PROVIDER_CONFIG_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';
/** The department fields a Group carries beyond RFC 7643 §4.2 (docs/scim.md#groups). */
const DEPT_GROUP_SCHEMA = DEPT_EXTENSION;

/** An attribute definition (RFC 7643 §7). */
interface Attribute {
  name: string;
  type: 'string' | 'boolean' | 'integer' | 'complex' | 'reference';
  multiValued: boolean;
  description: string;
  required: boolean;
  canonicalValues?: string[];
  caseExact: boolean;
  mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned: 'always' | 'never' | 'default' | 'request';
  uniqueness: 'none' | 'server' | 'global';
  referenceTypes?: string[];
  subAttributes?: Attribute[];
}

type Options = Partial<Omit<Attribute, 'name' | 'type' | 'description'>>;

/** RFC 7643 §7's defaults (single-valued, optional, case-insensitive, readWrite, returned by default, not unique) and what differs. */
const attribute = (name: string, type: Attribute['type'], description: string, options: Options = {}): Attribute => ({
  name,
  type,
  multiValued: false,
  description,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...options,
});
const string = (name: string, description: string, options?: Options) => attribute(name, 'string', description, options);
const complex = (name: string, description: string, subAttributes: Attribute[], options?: Options) =>
  attribute(name, 'complex', description, { ...options, subAttributes });

/** A resource's id: ours are decimal strings the service assigns. */
const id = (what: string) =>
  string('id', `The ${what}'s id, a decimal string assigned by the service.`, {
    caseExact: true,
    mutability: 'readOnly',
    returned: 'always',
    uniqueness: 'server',
  });
const externalId = (what: string) =>
  string('externalId', `The provisioning client's own id for the ${what}, kept as sent and compared exactly.`, { caseExact: true });

const USER_ATTRIBUTES: Attribute[] = [
  id('user'),
  externalId('user'),
  string('userName', `The user's login name, unique among the tenant's live users regardless of case; up to ${USER_NAME_MAX} characters.`, {
    required: true,
    uniqueness: 'server',
  }),
  complex('name', "The user's name. formatted is the display name when displayName is not sent.", [
    string('givenName', 'The given (first) name.'),
    string('familyName', 'The family (last) name.'),
    string('formatted', 'The full name for display: the same value as displayName.'),
  ]),
  string('displayName', `The user's name for display (the user's nickName); up to ${NICK_NAME_MAX} characters.`),
  complex(
    'emails',
    'The user\'s email address. The service keeps one: the "work" one sent, else the primary one, else the first; up to 254 characters.',
    [
      string('value', 'The email address.'),
      string('type', 'Always "work" as answered.', { canonicalValues: ['work', 'home', 'other'] }),
      attribute('primary', 'boolean', 'Always true as answered: the address kept is the primary one.'),
    ],
    { multiValued: true },
  ),
  complex(
    'phoneNumbers',
    'The user\'s phone number. The service keeps one: the "work" one sent, else the primary one, else the first.',
    [
      string('value', 'The phone number: digits, spaces, "+" and "-".'),
      string('type', 'Always "work" as answered.', { canonicalValues: ['work', 'home', 'mobile', 'fax', 'pager', 'other'] }),
    ],
    { multiValued: true },
  ),
  attribute('active', 'boolean', "Whether the user may sign in. Setting it to false ends the user's sessions at once."),
  string('password', "The user's password. Never returned; a user created without one cannot sign in with a password.", {
    mutability: 'writeOnly',
    returned: 'never',
  }),
  complex(
    'groups',
    "The user's department as a Group. Read-only here: a user joins a department through the Group's members.",
    [
      string('value', "The Group's id.", { caseExact: true, mutability: 'readOnly' }),
      attribute('$ref', 'reference', "The Group's URI.", { caseExact: true, mutability: 'readOnly', referenceTypes: ['Group'] }),
      string('display', "The department's name.", { mutability: 'readOnly' }),
      string('type', 'Always "direct": a user belongs to one department.', { canonicalValues: ['direct', 'indirect'], mutability: 'readOnly' }),
    ],
    { multiValued: true, mutability: 'readOnly' },
  ),
];

const ENTERPRISE_USER_ATTRIBUTES: Attribute[] = [
  string('department', "The name of the user's department. Read-only here: a user joins a department through the Groups.", {
    mutability: 'readOnly',
  }),
];

const GROUP_ATTRIBUTES: Attribute[] = [
  id('group'),
  externalId('group'),
  string('displayName', `The department's name: trimmed, 1 to ${DEPT_NAME_MAX} characters.`, { required: true }),
  complex(
    'members',
    'The live users whose department this is.',
    [
      string('value', "The member user's id.", { caseExact: true, mutability: 'immutable' }),
      attribute('$ref', 'reference', "The member user's URI.", { caseExact: true, mutability: 'immutable', referenceTypes: ['User'] }),
      string('display', "The member user's display name.", { mutability: 'readOnly' }),
      string('type', 'Always "User": departments hold users, not other departments.', { canonicalValues: ['User'], mutability: 'immutable' }),
    ],
    { multiValued: true },
  ),
];

const DEPT_GROUP_ATTRIBUTES: Attribute[] = [
  string('parentId', "The parent Group's id; absent or null for a top-level department.", { caseExact: true }),
  attribute('orderNum', 'integer', "The department's position among its siblings, an integer of 0 or more."),
  string('leader', "The name of the department's leader."),
  string('phone', "The department's phone number."),
  string('email', "The department's email address."),
  string('status', '"0" for a normal department, "1" for a disabled one.', { caseExact: true, canonicalValues: ['0', '1'] }),
  string('ancestors', 'The ids above the department, comma-separated from the root "0" ("0,100,101"); computed by the service.', {
    caseExact: true,
    mutability: 'readOnly',
  }),
];

const SCHEMAS = [
  { id: USER_SCHEMA, name: 'User', description: 'A user of the tenant.', attributes: USER_ATTRIBUTES },
  { id: ENTERPRISE_USER_SCHEMA, name: 'EnterpriseUser', description: "The user's department.", attributes: ENTERPRISE_USER_ATTRIBUTES },
  { id: GROUP_SCHEMA, name: 'Group', description: 'A department of the tenant.', attributes: GROUP_ATTRIBUTES },
  { id: DEPT_GROUP_SCHEMA, name: 'Department', description: "The department's own fields.", attributes: DEPT_GROUP_ATTRIBUTES },
];

const RESOURCE_TYPES = [
  { id: 'User', name: 'User', endpoint: '/Users', description: "The tenant's users.", schema: USER_SCHEMA, extension: ENTERPRISE_USER_SCHEMA },
  { id: 'Group', name: 'Group', endpoint: '/Groups', description: "The tenant's departments.", schema: GROUP_SCHEMA, extension: DEPT_GROUP_SCHEMA },
];

/** RFC 7643 §5. `base` is the SCIM base URL (`https://host/scim/v2`). */
export function serviceProviderConfig(base: string) {
  return {
    schemas: [SERVICE_PROVIDER_CONFIG_SCHEMA],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'API key (Bearer)',
        description:
          'An API key of role admin of the tenant, created with POST /system/apikey-api and sent as "Authorization: Bearer <key>". ' +
          "A person's token and a key of role user are refused.",
        specUri: 'https://www.rfc-editor.org/info/rfc6750',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

/** RFC 7643 §6: every resource type, in a stable order. */
export function resourceTypes(base: string) {
  return RESOURCE_TYPES.map((type) => ({
    schemas: [RESOURCE_TYPE_SCHEMA],
    id: type.id,
    name: type.name,
    endpoint: type.endpoint,
    description: type.description,
    schema: type.schema,
    schemaExtensions: [{ schema: type.extension, required: false }],
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/${type.id}` },
  }));
}

/** RFC 7643 §7: every schema, in a stable order. */
export function schemas(base: string) {
  return SCHEMAS.map((schema) => ({
    schemas: [SCHEMA_SCHEMA],
    ...schema,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${schema.id}` },
  }));
}

/**
 * One document of `list` by its id, or undefined. Resource type names and
 * schema URNs are compared without case, as SCIM compares attribute names
 * (RFC 7643 §2.1); providers do not all spell the URNs alike.
 */
export function byId<T extends { id: string }>(list: T[], id: string): T | undefined {
  return list.find((item) => item.id.toLowerCase() === id.toLowerCase());
}
