-- Writes of one tenant that do not conflict no longer wait for each other.
--
-- 1. The chart version (005) was one row per tenant, updated by every
--    department write and locked until its commit: a busy tenant's writes
--    queued on it one at a time. It becomes a small vector: one row per
--    (tenant, slot), a write updating only the slot of its own server
--    session (pg_backend_pid() % 64), so two sessions queue on each other
--    only when their slots collide. The chart's version is the whole vector
--    (src/depts/dept.chart.ts). Within a slot, writes are ordered by the row
--    lock and each writes a sequence value never used before, so two
--    snapshots that read the same vector hold the same committed writes:
--    equal vectors, equal charts.
ALTER TABLE dept_chart_version ADD COLUMN slot smallint NOT NULL DEFAULT 0;
ALTER TABLE dept_chart_version DROP CONSTRAINT dept_chart_version_pkey;
ALTER TABLE dept_chart_version ADD PRIMARY KEY (tenant_id, slot);

CREATE OR REPLACE FUNCTION dept_chart_bump() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  my_slot smallint := pg_backend_pid() % 64;
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO dept_chart_version AS v (tenant_id, slot, version)
    SELECT tenant_id, my_slot, nextval('dept_chart_version_seq') FROM (SELECT DISTINCT tenant_id FROM new_rows) t
    ON CONFLICT (tenant_id, slot) DO UPDATE SET version = excluded.version;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO dept_chart_version AS v (tenant_id, slot, version)
    SELECT tenant_id, my_slot, nextval('dept_chart_version_seq')
    FROM (SELECT tenant_id FROM new_rows UNION SELECT tenant_id FROM old_rows) t
    ON CONFLICT (tenant_id, slot) DO UPDATE SET version = excluded.version;
  ELSE
    INSERT INTO dept_chart_version AS v (tenant_id, slot, version)
    SELECT tenant_id, my_slot, nextval('dept_chart_version_seq') FROM (SELECT DISTINCT tenant_id FROM old_rows) t
    ON CONFLICT (tenant_id, slot) DO UPDATE SET version = excluded.version;
  END IF;
  RETURN NULL;
END $$;

-- 2. A record is written twice: inserted by its write without a position,
--    then updated by the sequencer with one. Until then the position and
--    per-tenant indexes have nothing to find it by (every reader asks for
--    positioned records), so they leave unpositioned rows out: the insert,
--    which every audited write waits for, updates two indexes fewer.
DROP INDEX audit_log_position_key;
CREATE UNIQUE INDEX audit_log_position_key ON audit_log (position) WHERE position IS NOT NULL;
DROP INDEX audit_log_tenant_idx;
CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, position) WHERE position IS NOT NULL;
