-- The version of the tenant rows, for the platform's tenant list by page
-- number (src/tenants/tenant.pages.ts): a page far down the list walked every
-- live id before it (10,000 for the last page at 10,000 tenants, half a
-- millisecond on the development machine, where the first page's walk takes
-- a few hundredths). The service keeps the live ids in order, and the pages
-- it has answered, with the version they were read at, and answers from them
-- while the version read for the request is the same.
--
-- Every statement that writes sys_tenant (an insert, an update, a delete, a
-- truncate) writes a new sequence value into the slot of its server session
-- (pg_backend_pid() % 64), in its own transaction, as
-- sql/010_concurrent_writes.sql does for the chart version: two tenant
-- writes queue on each other only when their slots collide, and two
-- snapshots that read the same vector hold the same committed writes, so the
-- same tenant rows.
CREATE SEQUENCE sys_tenant_list_version_seq;

CREATE TABLE sys_tenant_list_version (
  slot    smallint PRIMARY KEY,
  version bigint   NOT NULL
);

CREATE FUNCTION sys_tenant_list_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO sys_tenant_list_version AS v (slot, version)
  VALUES (pg_backend_pid() % 64, nextval('sys_tenant_list_version_seq'))
  ON CONFLICT (slot) DO UPDATE SET version = excluded.version;
  RETURN NULL;
END $$;

CREATE TRIGGER sys_tenant_list_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON sys_tenant
  FOR EACH STATEMENT EXECUTE FUNCTION sys_tenant_list_bump();
