-- The change feed on several servers (docs/scale-out.md#the-change-feed).
-- audit_feed keeps two numbers: assigned_position, the last position the
-- sequencer handed out (its counter, under the row lock), and last_position,
-- the last one published: every record at or below it is committed and
-- visible, and no reader of the feed reads above it. On one PostgreSQL the
-- two differ only for the moment between a run's commit and its publish; on
-- Citus that moment is when the run's commit becomes visible on each server
-- in turn. The sequencer is now the service's own code
-- (src/audit/audit.sequencer.ts, assignPositions): its statements run on every
-- shard, which a function hides from Citus's refusal of multi-shard
-- statements (src/db/citus.ts), so the function goes.
ALTER TABLE audit_feed ADD COLUMN assigned_position bigint;
UPDATE audit_feed SET assigned_position = last_position;
ALTER TABLE audit_feed ALTER COLUMN assigned_position SET NOT NULL;
DROP FUNCTION audit_assign_positions(integer);
