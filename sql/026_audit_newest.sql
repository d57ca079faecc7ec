-- The newest records of the audit trail, whole: a copy of the 1,001 records
-- of audit_log with the highest positions (all of them while there are
-- fewer), kept by the sequencer as it positions records and by the
-- retention purge as it deletes them (src/audit/audit.newest.ts), in the
-- transactions that change the trail.
--
-- Why: the superadmin's audit list, unfiltered, newest first across every
-- tenant, needs only these for its first 100 pages of 10 and its count up to
-- 1,000 (docs/api-rules.md#paging). On Citus audit_log is spread over every
-- shard by tenant, so that list read the first positions of every shard and
-- then its page's records from the shards of their tenants: a statement over
-- 32 shards and one over ten per page. This table is a reference table there
-- (a copy on every server), read on the coordinator alone in one statement
-- (docs/scale-out.md#what-it-costs). On one PostgreSQL it is kept and read
-- the same way, one rule for every database, and a database moved to Citus
-- or restored there arrives with it.
--
-- It belongs to the platform, like audit_time_block: every tenant's newest
-- records in one order. Its columns are audit_log's but seq (internal).
--
-- A bulk load of records that already carry positions calls
-- audit_time_blocks_rebuild() after it (docs/operations.md), which now makes
-- this copy again too. So does an operator once the last node of an earlier
-- version has stopped, when old and new nodes ran together: an old node's
-- sequencer positions records without copying them.
CREATE TABLE audit_newest (
  position       bigint      PRIMARY KEY,
  time           timestamptz NOT NULL,
  tenant_id      text        NOT NULL,
  user_name      text        NOT NULL,
  user_tenant_id text        NOT NULL,
  action         text        NOT NULL,
  entity_type    text        NOT NULL,
  entity_id      text        NOT NULL,
  request_id     text,
  ip             text,
  changes        jsonb       NOT NULL
);

-- Under audit_feed's row lock, which every sequencer run holds: the copy is
-- made of what the runs before it committed, and a run after it adds its own.
CREATE OR REPLACE FUNCTION audit_time_blocks_rebuild() RETURNS void LANGUAGE sql AS $$
  SELECT 1 FROM audit_feed WHERE id = 1 FOR UPDATE;
  INSERT INTO audit_time_block AS b (block, min_time, max_time)
  SELECT position / 256, min(time), max(time) FROM audit_log WHERE position IS NOT NULL GROUP BY position / 256
  ON CONFLICT (block) DO UPDATE SET min_time = least(b.min_time, EXCLUDED.min_time), max_time = greatest(b.max_time, EXCLUDED.max_time);
  DELETE FROM audit_newest;
  INSERT INTO audit_newest (position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, request_id, ip, changes)
  SELECT position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, request_id, ip, changes
  FROM audit_log WHERE position IS NOT NULL ORDER BY position DESC LIMIT 1001;
$$;

-- The records positioned so far.
SELECT audit_time_blocks_rebuild();
