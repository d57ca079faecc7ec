import { Type, type Static } from '@sinclair/typebox';
import { PageOf, PageParams, Status, TenantCode } from '../core/common.schema.js';
import { propertiesOf } from '../db/fields.js';
import { CONNECTION_FIELDS } from './sso.fields.js';

// Single sign-on (docs/sso.md): one schema for a connection as read (plus its
// redirect URI, made from the service's public URL), the create and replace
// bodies derived from it; the policy; and the bodies and queries of the flow.

const F = propertiesOf(CONNECTION_FIELDS);

export const SsoConnection = Type.Object(
  {
    ...F,
    redirectUri: Type.String({ description: 'The redirect URI to register at the provider: `{PUBLIC_URL}/auth/sso/{id}/callback`' }),
  },
  { $id: 'SsoConnection' },
);

const ClientSecret = Type.String({
  minLength: 1,
  maxLength: 1024,
  description: 'Write-only: never returned, logged or recorded in the audit trail',
});

/** The writable fields: the optional ones take their defaults when omitted. */
const writable = {
  name: F.name,
  issuer: F.issuer,
  clientId: F.clientId,
  scopes: Type.Optional(F.scopes),
  subjectClaim: Type.Optional(F.subjectClaim),
  allowedTids: Type.Optional(F.allowedTids),
  emailDomains: Type.Optional(F.emailDomains),
  link: Type.Optional(F.link),
  jit: Type.Optional(F.jit),
  jitDeptId: Type.Optional(F.jitDeptId),
  returnUrls: F.returnUrls,
  status: Type.Optional(Status),
};

export const SsoConnectionCreate = Type.Object(
  { ...writable, tenantId: Type.Optional(F.tenantId), clientSecret: ClientSecret },
  {
    $id: 'SsoConnectionCreate',
    additionalProperties: false,
    examples: [
      {
        name: 'Contoso Entra ID',
        issuer: 'https://login.microsoftonline.com/00000000-0000-0000-0000-000000000000/v2.0',
        clientId: 'b2f0c0de-0000-0000-0000-000000000000',
        clientSecret: 'the secret the provider issued',
        subjectClaim: 'oid',
        allowedTids: ['00000000-0000-0000-0000-000000000000'],
        returnUrls: ['https://admin.example.com/sso/done'],
      },
    ],
  },
);

/** Full replacement, like every PUT here; without clientSecret the stored one is kept. The tenant never changes. */
export const SsoConnectionUpdate = Type.Object(
  { id: F.id, ...writable, clientSecret: Type.Optional(ClientSecret) },
  { $id: 'SsoConnectionUpdate', additionalProperties: false },
);

export const SsoConnectionPage = PageOf(Type.Ref('SsoConnection'));
export const SsoConnectionPageQuery = Type.Object({ ...PageParams });
export const SsoIdParam = Type.Object({ id: Type.String({ maxLength: 40, description: 'A connection id, `<tenantId>-<n>`' }) });

export const SsoPolicy = Type.Object(
  { ssoRequired: Type.Boolean({ description: "While true the tenant's users of role user cannot sign in with a password; its admins can" }) },
  { $id: 'SsoPolicy', additionalProperties: false },
);
export const TenantParam = Type.Object({ tenantId: TenantCode() });

/** What a login page needs: whether the tenant insists on SSO, and its enabled connections. */
export const SsoDiscovery = Type.Object(
  {
    ssoRequired: Type.Boolean(),
    connections: Type.Array(Type.Object({ id: F.id, name: F.name })),
  },
  { $id: 'SsoDiscovery' },
);
export const SsoDiscoveryQuery = Type.Object({ tenantId: TenantCode('The tenant signing in') });

const Base64UrlText = (min: number, max: number, description: string) =>
  Type.String({ minLength: min, maxLength: max, pattern: '^[A-Za-z0-9_-]+$', description });

export const AuthorizeQuery = Type.Object({
  return_to: Type.String({ minLength: 1, maxLength: 2048, description: "Exactly one of the connection's returnUrls" }),
  state: Type.String({ minLength: 1, maxLength: 512, description: "The SPA's own state, handed back with the code" }),
  code_challenge: Base64UrlText(43, 128, "The SPA's PKCE challenge (S256 of its verifier)"),
  code_challenge_method: Type.Literal('S256'),
});

/** What the provider sends the browser back with: a code, or an error (always with the state). */
export const CallbackQuery = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 4096 })),
  state: Type.Optional(Type.String({ maxLength: 512 })),
  iss: Type.Optional(Type.String({ maxLength: 2048 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 4096 })),
  session_state: Type.Optional(Type.String({ maxLength: 512 })),
});

export const SsoTokenBody = Type.Object(
  {
    code: Type.String({ minLength: 1, maxLength: 256, description: 'The one-time code the callback handed to return_to' }),
    code_verifier: Base64UrlText(43, 128, "The SPA's PKCE verifier"),
  },
  { $id: 'SsoTokenBody', additionalProperties: false },
);

export type SsoConnection = Static<typeof SsoConnection>;
export type SsoConnectionCreate = Static<typeof SsoConnectionCreate>;
export type SsoConnectionUpdate = Static<typeof SsoConnectionUpdate>;
