import { Type } from '@sinclair/typebox';
import { EntityId, Nullable, Status, TENANT_CODE, TenantCode } from '../core/common.schema.js';
import { AUDIT_FIELDS, field } from '../db/fields.js';

// A single sign-on connection's fields, once: API name, column of
// sso_connection, schema, write default. sso.schema.ts builds the schemas
// from this list, sso.sql.ts its SELECT list, row mapping, write columns and
// audit description, and sso.signin.sql.ts the sign-in's read. The client
// secret is not here: it is written, never read back by the API
// (sso.schema.ts has it in the write bodies alone, the sign-in adds it).

/** `https://...`; http:// only to an address in OUTBOUND_ALLOWED_CIDRS (checked on save and on every connection). */
const Url = (description: string) => Type.String({ minLength: 8, maxLength: 2048, pattern: '^[hH][tT][tT][pP][sS]?://', description });

/**
 * What a connection is set to, its tenant included: all but its id and
 * bookkeeping. An audit record says these of it (sso.sql.ts described), and
 * a sign-in reads them (sso.signin.sql.ts).
 */
export const SETTING_FIELDS = {
  tenantId: field('tenant_id', TenantCode('Yours by default; any tenant of your subtree')),
  name: field('name', Type.String({ minLength: 1, maxLength: 100, pattern: '\\S', description: 'Shown on the login page' }), {
    write: { required: true },
  }),
  issuer: field('issuer', Url("The provider's issuer, compared exactly with the ID token's `iss`"), { write: { required: true } }),
  clientId: field('client_id', Type.String({ minLength: 1, maxLength: 255, description: "This service's client id at the provider" }), {
    write: { required: true },
  }),
  scopes: field('scopes', Type.String({ minLength: 6, maxLength: 500, pattern: '(^|\\s)openid(\\s|$)', description: 'Must include openid' }), {
    write: { default: 'openid email profile' },
  }),
  subjectClaim: field(
    'subject_claim',
    Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[A-Za-z0-9_.:-]+$',
      description: 'The ID token claim that names the person: `sub`, or `oid` for Entra ID',
    }),
    { write: { default: 'sub' } },
  ),
  allowedTids: field(
    'allowed_tids',
    Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
      maxItems: 100,
      uniqueItems: true,
      description: 'Entra ID: the directories whose `tid` is accepted; empty: the claim is not checked',
    }),
    { write: { default: [] } },
  ),
  emailDomains: field(
    'email_domains',
    Type.Array(Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.-]+$' }), {
      maxItems: 100,
      uniqueItems: true,
      description: 'The domains this provider vouches for: an email links a person only in one of them',
    }),
    { write: { default: [] } },
  ),
  link: field(
    'link',
    Type.Union([Type.Literal('externalId'), Type.Literal('email'), Type.Literal('none')], {
      description: 'How a first sign-in finds its person: by the SCIM externalId, by a verified email, or only by a link made before',
    }),
    { write: { default: 'externalId' } },
  ),
  jit: field('jit', Type.Boolean({ description: 'Create a person no rule finds (role user)' }), { write: { default: false } }),
  jitDeptId: field('jit_dept_id', Nullable(EntityId('The department of people created on first sign-in; null: none')), {
    write: { default: null },
  }),
  returnUrls: field(
    'return_urls',
    Type.Array(Type.String({ minLength: 8, maxLength: 2048 }), {
      minItems: 1,
      maxItems: 20,
      uniqueItems: true,
      description: 'The exact URLs the SPA may be sent back to: https://, or http:// on localhost or 127.0.0.1',
    }),
    { write: { required: true } },
  ),
  status: field('status', Status, { write: { default: '0' } }),
};

export const CONNECTION_FIELDS = {
  id: field('connection_id', Type.String({ pattern: `^${TENANT_CODE}-[0-9]{1,19}$`, description: 'Generated: `<tenantId>-<n>`' }), {
    read: (n: number, row) => `${String(row.tenantId)}-${n}`,
  }),
  ...SETTING_FIELDS,
  createBy: AUDIT_FIELDS.createBy,
  createTime: AUDIT_FIELDS.createTime,
  updateBy: field('update_by', Nullable(Type.String())),
  updateTime: AUDIT_FIELDS.updateTime,
};
