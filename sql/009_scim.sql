-- SCIM 2.0 provisioning (RFC 7643, RFC 7644): an identity provider keeps
-- users and groups (our departments) in step with its directory.
--
-- external_id is the provider's own id for the resource (SCIM `externalId`):
-- it sends it on create and looks resources up by it, so it is stored as
-- sent. Nullable: resources made through our own API have none.
-- given_name and family_name hold SCIM `name.givenName` and
-- `name.familyName`: providers send a person's name in parts, and nick_name
-- (`displayName`) alone could not give them back.
-- Adding nullable columns without a default rewrites no rows.
ALTER TABLE sys_user
  ADD COLUMN external_id text,
  ADD COLUMN given_name  text,
  ADD COLUMN family_name text;

ALTER TABLE sys_dept
  ADD COLUMN external_id text;

-- Identity providers use e-mail addresses as login names, longer than
-- RuoYi's 30 characters and 50 for an address: a user's login name may
-- be up to 100 characters and its email up to 254 (the longest address
-- SMTP carries), through SCIM and the REST API alike.
ALTER TABLE sys_user
  ALTER COLUMN user_name TYPE varchar(100),
  ALTER COLUMN email     TYPE varchar(254);

-- Providers look resources up by their own id (filter externalId eq "..."):
-- one index probe per lookup instead of a scan of the tenant's users or
-- departments. Partial: rows made through the REST API have none.
CREATE INDEX sys_user_external_id_idx ON sys_user (tenant_id, external_id) WHERE external_id IS NOT NULL;
CREATE INDEX sys_dept_external_id_idx ON sys_dept (tenant_id, external_id) WHERE external_id IS NOT NULL;
