-- The sequencer widens the position blocks' time spans (014) in the
-- statement that positions the records, instead of a statement trigger on
-- audit_log. The trigger's transition table copied every positioned record,
-- its changes included, to hand over two columns, on every sequencer run:
-- about three points of an audited write's cost on the embedded database,
-- where the sequencer shares the one connection with the requests
-- (docs/benchmark.md, Cost of the audit trail). Here the UPDATE's RETURNING
-- hands over just the position and the time.
--
-- The sequencer is the only writer that gives a record its position; records
-- inserted with one already are widened by 014's row trigger, and
-- audit_time_blocks_rebuild() catches up after a bulk load.
DROP TRIGGER audit_time_blocks_placed ON audit_log;
DROP FUNCTION audit_time_blocks_widen();

-- VOLATILE for the reason 004 gives: each statement sees what committed before the lock.
CREATE OR REPLACE FUNCTION audit_assign_positions(batch integer) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  placed_count bigint;
  last bigint;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM audit_log WHERE position IS NULL) THEN
    RETURN NULL;
  END IF;
  PERFORM 1 FROM audit_feed WHERE id = 1 FOR UPDATE;
  WITH todo AS (
    SELECT seq, row_number() OVER (ORDER BY seq) AS n
    FROM audit_log WHERE position IS NULL ORDER BY seq LIMIT batch
  ),
  placed AS (
    UPDATE audit_log a SET position = f.last_position + todo.n
    FROM todo, audit_feed f
    WHERE f.id = 1 AND a.seq = todo.seq
    RETURNING a.position, a.time
  ),
  -- One upsert per block the batch reaches; a span only widens.
  widened AS (
    INSERT INTO audit_time_block AS b (block, min_time, max_time)
    SELECT position / 256, min(time), max(time) FROM placed GROUP BY position / 256
    ON CONFLICT (block) DO UPDATE SET min_time = least(b.min_time, EXCLUDED.min_time), max_time = greatest(b.max_time, EXCLUDED.max_time)
    WHERE EXCLUDED.min_time < b.min_time OR EXCLUDED.max_time > b.max_time
  )
  UPDATE audit_feed SET last_position = last_position + (SELECT count(*) FROM placed)
  WHERE id = 1
  RETURNING last_position, (SELECT count(*) FROM placed) INTO last, placed_count;
  IF placed_count = 0 THEN
    RETURN NULL;
  END IF;
  -- Delivered to every listening node when this transaction commits.
  PERFORM pg_notify('audit_feed', last::text);
  RETURN last;
END $$;
