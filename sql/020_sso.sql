-- Single sign-on through a tenant's identity provider, OpenID Connect
-- (docs/sso.md): the tenant's connections to its providers, the links
-- between a provider's subjects and the tenant's users, the sign-ins in
-- flight, the one-time codes handed back to the SPA, and the tenant's
-- "SSO required" policy. Every table leads with tenant_id; the public ids
-- (a connection's `id`, the codes) carry their tenant's code, so every
-- statement names the tenant, the unauthenticated ones included.

CREATE TABLE sso_connection (
  tenant_id      text        NOT NULL,
  -- The API's `id` (and the redirect URI's) is `<tenant_id>-<connection_id>`.
  connection_id  bigint      GENERATED ALWAYS AS IDENTITY (START WITH 1),
  name           text        NOT NULL,
  issuer         text        NOT NULL,
  client_id      text        NOT NULL,
  -- Write-only: never read back by the API, never logged, never in an audit record.
  client_secret  text        NOT NULL,
  scopes         text        NOT NULL DEFAULT 'openid email profile',
  subject_claim  text        NOT NULL DEFAULT 'sub',
  allowed_tids   text[]      NOT NULL DEFAULT '{}',
  email_domains  text[]      NOT NULL DEFAULT '{}',
  link           text        NOT NULL DEFAULT 'externalId',
  jit            boolean     NOT NULL DEFAULT false,
  jit_dept_id    bigint,
  return_urls    text[]      NOT NULL DEFAULT '{}',
  status         char(1)     NOT NULL DEFAULT '0',
  create_by      text        NOT NULL,
  create_time    timestamptz NOT NULL DEFAULT now(),
  update_by      text,
  update_time    timestamptz,
  CONSTRAINT sso_connection_pkey PRIMARY KEY (tenant_id, connection_id),
  CONSTRAINT sso_connection_tenant_fkey FOREIGN KEY (tenant_id) REFERENCES sys_tenant (tenant_id),
  CONSTRAINT sso_connection_link_check CHECK (link IN ('externalId', 'email', 'none')),
  CONSTRAINT sso_connection_status_check CHECK (status IN ('0', '1'))
);

-- A person of the tenant known to a connection by the provider's subject
-- (the claim the connection names). Made once, on the first sign-in that
-- found the person; kept when the provider's email changes later.
CREATE TABLE sso_link (
  tenant_id      text        NOT NULL,
  connection_id  bigint      NOT NULL,
  subject        text        NOT NULL,
  user_id        bigint      NOT NULL,
  create_time    timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT sso_link_pkey PRIMARY KEY (tenant_id, connection_id, subject),
  CONSTRAINT sso_link_connection_fkey FOREIGN KEY (tenant_id, connection_id) REFERENCES sso_connection (tenant_id, connection_id) ON DELETE CASCADE,
  CONSTRAINT sso_link_user_fkey FOREIGN KEY (tenant_id, user_id) REFERENCES sys_user (tenant_id, user_id)
);
CREATE INDEX sso_link_user_idx ON sso_link (tenant_id, user_id);

-- A sign-in in flight, from the authorize redirect to the provider's
-- callback: the provider leg's PKCE verifier, state and nonce, and what the
-- SPA sent (its return URL, its state, its PKCE challenge). Taken (deleted)
-- by the callback that presents its state, so a state is honoured once.
CREATE TABLE sso_attempt (
  tenant_id      text        NOT NULL,
  state_hash     bytea       NOT NULL,
  connection_id  bigint      NOT NULL,
  code_verifier  text        NOT NULL,
  nonce          text        NOT NULL,
  redirect_uri   text        NOT NULL,
  return_to      text        NOT NULL,
  spa_state      text        NOT NULL,
  spa_challenge  text        NOT NULL,
  expires_at     timestamptz NOT NULL,
  CONSTRAINT sso_attempt_pkey PRIMARY KEY (tenant_id, state_hash),
  CONSTRAINT sso_attempt_connection_fkey FOREIGN KEY (tenant_id, connection_id) REFERENCES sso_connection (tenant_id, connection_id) ON DELETE CASCADE
);
CREATE INDEX sso_attempt_expires_idx ON sso_attempt (tenant_id, expires_at);

-- The one-time code the callback hands to the SPA, bound to the SPA's PKCE
-- challenge: redeemed (deleted) by POST /auth/sso/token once, within 60 s.
-- Only its hash is kept.
CREATE TABLE sso_code (
  tenant_id      text        NOT NULL,
  code_hash      bytea       NOT NULL,
  connection_id  bigint      NOT NULL,
  user_id        bigint      NOT NULL,
  spa_challenge  text        NOT NULL,
  expires_at     timestamptz NOT NULL,
  CONSTRAINT sso_code_pkey PRIMARY KEY (tenant_id, code_hash),
  CONSTRAINT sso_code_user_fkey FOREIGN KEY (tenant_id, user_id) REFERENCES sys_user (tenant_id, user_id)
);
CREATE INDEX sso_code_expires_idx ON sso_code (tenant_id, expires_at);

-- "SSO required": while true, the tenant's users of role `user` cannot sign
-- in with a password (its admins can: the way back in when the provider is
-- down). No row: false.
CREATE TABLE sso_policy (
  tenant_id      text        NOT NULL,
  sso_required   boolean     NOT NULL,
  update_by      text        NOT NULL,
  update_time    timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT sso_policy_pkey PRIMARY KEY (tenant_id),
  CONSTRAINT sso_policy_tenant_fkey FOREIGN KEY (tenant_id) REFERENCES sys_tenant (tenant_id)
);
