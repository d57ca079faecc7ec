-- One schema for plain PostgreSQL, the embedded database and a Citus cluster
-- (docs/scale-out.md). Citus refuses a table with triggers as a reference
-- or distributed table, and a unique key of a distributed table that leaves
-- out its distribution column (tenant_id). So, on every database alike:
--
-- 1. sys_tenant's triggers go. The tenant writes keep its name trigrams
--    (sys_tenant_name_gram) and the version of the tenant rows
--    (sys_tenant_list_version) themselves, in their own transaction
--    (src/tenants/tenant.grams.ts, src/identity/tenant.version.ts).
-- 2. sys_dept's chart-version triggers go. Every department write moves its
--    tenant's chart version on in the statement that writes the departments
--    (src/depts/dept.chart.ts, chartBump), the same slot and sequence as
--    before. A program that writes sys_dept straight in SQL must do the same
--    (docs/operations.md), or the cached chart is served until it is evicted.
-- 3. audit_log's row trigger for records inserted with a position goes: a
--    bulk load of such records calls audit_time_blocks_rebuild() after it
--    (docs/operations.md), as loads already did with the trigger disabled.
-- 4. audit_log's keys lead with tenant_id: the primary key becomes
--    (tenant_id, seq), and the position index is no longer unique (Citus
--    cannot check a unique position across shards). Positions stay unique by
--    the sequencer, the only writer that hands them out, one run at a time
--    under audit_feed's row lock (sql/004_audit.sql).
-- 5. A login lock row keeps the end of its window beside its start. Citus
--    runs an upsert on a distributed table only when its DO UPDATE calls
--    IMMUTABLE functions alone, and "start + 10 minutes" is not one
--    (timestamptz + interval is STABLE): the upsert that counts a failed
--    login (src/auth/auth.sql.ts, reserveLoginAttempt) compares the stored
--    end with now() instead. The rows there were written with the 10-minute
--    window the code has always had.
DROP TRIGGER sys_tenant_name_grams_insert ON sys_tenant;
DROP TRIGGER sys_tenant_name_grams_rename ON sys_tenant;
DROP FUNCTION sys_tenant_name_grams_write();
DROP TRIGGER sys_tenant_list_bump ON sys_tenant;
DROP FUNCTION sys_tenant_list_bump();

DROP TRIGGER sys_dept_chart_insert ON sys_dept;
DROP TRIGGER sys_dept_chart_update ON sys_dept;
DROP TRIGGER sys_dept_chart_delete ON sys_dept;
DROP TRIGGER sys_dept_chart_truncate ON sys_dept;
DROP FUNCTION dept_chart_bump();
DROP FUNCTION dept_chart_bump_all();

DROP TRIGGER audit_time_blocks_inserted ON audit_log;
DROP FUNCTION audit_time_blocks_widen_row();

ALTER TABLE audit_log DROP CONSTRAINT audit_log_pkey;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_pkey PRIMARY KEY (tenant_id, seq);
DROP INDEX audit_log_position_key;
CREATE INDEX audit_log_position_idx ON audit_log (position) INCLUDE (time, user_name) WHERE position IS NOT NULL;

ALTER TABLE login_lock ADD COLUMN window_end timestamptz;
UPDATE login_lock SET window_end = window_start + interval '10 minutes';
ALTER TABLE login_lock ALTER COLUMN window_end SET NOT NULL;
