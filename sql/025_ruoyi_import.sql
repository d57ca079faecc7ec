-- Moving in from RuoYi-Vue-Plus (docs/migrate-from-ruoyi.md).
--
-- 1. A department's leader is a person's name: RuoYi 5.x keeps the leader's
--    user id and the import writes that person's nick name, so the column
--    holds what a nick name holds (sql/019_long_names.sql), for imported and
--    new departments alike.
-- 2. The department and user ids the service hands out itself stay within
--    2^53-1, the integers a JSON number carries exactly. Imported ids keep
--    their values, RuoYi's snowflakes beyond that included; the import moves
--    these sequences past the imported ids that are within it.
-- 3. What each import wrote: one row per source row brought in, by tenant,
--    kind and source id, with the digest of the row as written. A later run
--    writes only the rows whose digest changed, so a run over an unchanged
--    source writes nothing, and what people changed in the service since is
--    not overwritten by a source row that did not change. Tenant-owned
--    (tenant_id leads its key; packages are kept under the platform's code).
ALTER TABLE sys_dept ALTER COLUMN leader TYPE varchar(100);
ALTER TABLE sys_dept ALTER COLUMN dept_id SET MAXVALUE 9007199254740991;
ALTER TABLE sys_user ALTER COLUMN user_id SET MAXVALUE 9007199254740991;

CREATE TABLE ruoyi_import_row (
  tenant_id text   NOT NULL,
  kind      text   NOT NULL,
  source_id bigint NOT NULL,
  digest    text   NOT NULL,
  CONSTRAINT ruoyi_import_row_pkey PRIMARY KEY (tenant_id, kind, source_id),
  CONSTRAINT ruoyi_import_row_kind_check CHECK (kind IN ('package', 'tenant', 'dept', 'user'))
);
