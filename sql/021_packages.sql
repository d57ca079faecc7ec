-- Tenant packages (docs/api-rules.md#packages): named menu lists the
-- platform keeps, which tenants take instead of a menu list of their own.
-- Platform-wide, not a tenant's data: no tenant_id, a reference table under
-- Citus like sys_tenant (docs/scale-out.md). Ids are snowflake-style, from
-- the same function as tenant ids (sql/001_init.sql), so any number of nodes
-- never collide. Delete is logical, so a tenant's package_id always names a
-- row.
CREATE TABLE sys_package (
  package_id   bigint      NOT NULL DEFAULT next_snowflake_id(),
  package_name text        NOT NULL,
  -- Normalised as a tenant's packageBo.menuIds is: "1,2,3".
  menu_ids     text        NOT NULL DEFAULT '',
  remark       text,
  status       char(1)     NOT NULL DEFAULT '0',
  del_flag     char(1)     NOT NULL DEFAULT '0',
  create_by    text        NOT NULL DEFAULT '',
  create_time  timestamptz NOT NULL DEFAULT now(),
  update_by    text        NOT NULL DEFAULT '',
  update_time  timestamptz,
  CONSTRAINT sys_package_pkey PRIMARY KEY (package_id),
  CONSTRAINT sys_package_status_check CHECK (status IN ('0', '1')),
  CONSTRAINT sys_package_del_flag_check CHECK (del_flag IN ('0', '2'))
);
-- Names are unique among live packages only: a deleted package's name may be reused.
CREATE UNIQUE INDEX sys_package_name_live_key ON sys_package (package_name) WHERE del_flag = '0';

-- The package a tenant is on; NULL when it keeps a menu list of its own.
-- menu_ids stays the tenant's effective menus, written from the package when
-- the tenant takes it and whenever the package's menus change, so every read
-- of a tenant is as before.
ALTER TABLE sys_tenant ADD COLUMN package_id bigint
  CONSTRAINT sys_tenant_package_fkey REFERENCES sys_package (package_id);
-- A package's live tenants: the ones its menu change reaches, and the count that refuses its delete.
CREATE INDEX sys_tenant_package_idx ON sys_tenant (package_id) WHERE del_flag = '0' AND package_id IS NOT NULL;
