-- API keys (docs/security.md#api-keys): credentials for programs, acting in
-- their tenant with a role, instead of a person's password.
--
-- Only a hash of the key is kept: SHA-256, enough for a secret of 32 random
-- bytes (nobody can guess it, so a slow password hash would add cost and no
-- safety). The key carries its tenant's code, so the lookup names the tenant
-- like every other statement on a tenant-owned table.
CREATE TABLE sys_api_key (
  tenant_id       text        NOT NULL,
  key_id          bigint      GENERATED ALWAYS AS IDENTITY (START WITH 100),
  name            text        NOT NULL,
  role            text        NOT NULL,
  key_hash        bytea       NOT NULL,
  -- The last day the key is honoured (the service's time zone); NULL: no end.
  expires_at      date,
  -- Kept to the minute: at most one write per key and minute.
  last_used_time  timestamptz,
  create_by       text        NOT NULL,
  create_time     timestamptz NOT NULL DEFAULT now(),
  -- A revoked key is kept (its audit records name it) but never honoured again.
  revoke_by       text,
  revoke_time     timestamptz,
  PRIMARY KEY (tenant_id, key_id),
  CONSTRAINT sys_api_key_role_check CHECK (role IN ('admin', 'user')),
  CONSTRAINT sys_api_key_tenant_fkey FOREIGN KEY (tenant_id) REFERENCES sys_tenant (tenant_id)
);
-- The per-request lookup.
CREATE UNIQUE INDEX sys_api_key_hash_key ON sys_api_key (tenant_id, key_hash);
-- A live key's name is what its audit records show (apikey:<name>): one per tenant.
CREATE UNIQUE INDEX sys_api_key_name_live_key ON sys_api_key (tenant_id, name) WHERE revoke_time IS NULL;
