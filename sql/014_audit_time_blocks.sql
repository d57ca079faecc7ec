-- The platform's audit list for a time window, newest first (by position).
-- Positions follow commit order, times the writing transaction, so the two
-- almost agree but not exactly: the window's newest records by position
-- could only be found by reading every record of the window (a day of
-- 3,300 records at a million) and keeping the newest. Here every block of
-- 256 consecutive positions keeps the earliest and latest time of its
-- records; the window's records all lie in the blocks whose span meets the
-- window, so the list walks positions newest first from the top of the last
-- such block down to the bottom of the first (src/audit/audit.sql.ts,
-- windowPositions and windowPage), and stops once it has its page.
--
-- A span only ever widens: a record's time never changes, and retention's
-- deletes leave a span wider than its records, which costs a little reading,
-- never a record.
CREATE TABLE audit_time_block (
  block    bigint      PRIMARY KEY,  -- position / 256
  min_time timestamptz NOT NULL,
  max_time timestamptz NOT NULL
);
-- The blocks that end at or after a window's start, from the index alone
-- (their spans and numbers are in it).
CREATE INDEX audit_time_block_max_idx ON audit_time_block (max_time) INCLUDE (min_time, block);

-- Widens the spans of the blocks of the positioned records in `placed`.
CREATE FUNCTION audit_time_blocks_widen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit_time_block AS b (block, min_time, max_time)
  SELECT position / 256, min(time), max(time) FROM placed WHERE position IS NOT NULL GROUP BY position / 256
  ON CONFLICT (block) DO UPDATE SET min_time = least(b.min_time, EXCLUDED.min_time), max_time = greatest(b.max_time, EXCLUDED.max_time)
  WHERE EXCLUDED.min_time < b.min_time OR EXCLUDED.max_time > b.max_time;
  RETURN NULL;
END $$;

-- The sequencer positions records by UPDATE, a batch per statement: one
-- widening per batch. (A trigger per row would run for each of the 10,000.)
CREATE TRIGGER audit_time_blocks_placed AFTER UPDATE ON audit_log
  REFERENCING NEW TABLE AS placed FOR EACH STATEMENT EXECUTE FUNCTION audit_time_blocks_widen();

-- Records inserted with a position already (an import, a restore) are rare;
-- an audited write inserts its record without one and does not call this.
-- A bulk load widens a block once per record, each time a new row version:
-- load with this trigger disabled, then call audit_time_blocks_rebuild().
CREATE FUNCTION audit_time_blocks_widen_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit_time_block AS b (block, min_time, max_time) VALUES (NEW.position / 256, NEW.time, NEW.time)
  ON CONFLICT (block) DO UPDATE SET min_time = least(b.min_time, EXCLUDED.min_time), max_time = greatest(b.max_time, EXCLUDED.max_time)
  WHERE EXCLUDED.min_time < b.min_time OR EXCLUDED.max_time > b.max_time;
  RETURN NULL;
END $$;

CREATE TRIGGER audit_time_blocks_inserted AFTER INSERT ON audit_log
  FOR EACH ROW WHEN (NEW.position IS NOT NULL) EXECUTE FUNCTION audit_time_blocks_widen_row();

-- Widens every block to the records positioned so far, in one statement:
-- after a bulk load of positioned records (above), and below.
CREATE FUNCTION audit_time_blocks_rebuild() RETURNS void LANGUAGE sql AS $$
  INSERT INTO audit_time_block AS b (block, min_time, max_time)
  SELECT position / 256, min(time), max(time) FROM audit_log WHERE position IS NOT NULL GROUP BY position / 256
  ON CONFLICT (block) DO UPDATE SET min_time = least(b.min_time, EXCLUDED.min_time), max_time = greatest(b.max_time, EXCLUDED.max_time)
$$;

-- The records positioned so far. The triggers above are in place first: a
-- sequencer run waits for this migration's lock on audit_log, then widens.
SELECT audit_time_blocks_rebuild();
