-- Audit trail and change feed (docs/api-rules.md#audit-trail-and-change-feed).
--
-- A record is inserted by the write it describes, in that write's
-- transaction, without a feed position. Positions are handed out after
-- commit by the sequencer (src/audit/audit.feed.ts), one run at a time under
-- the row lock of audit_feed, to the records committed by then. So a position
-- is never given to a record that a reader could still see appear below it:
-- positions follow commit visibility, not insertion or sequence order.

CREATE TABLE audit_log (
  -- Insertion order, internal only: a sequence value, not commit order.
  seq            bigserial   PRIMARY KEY,
  -- The record's public id and feed cursor; NULL until the sequencer runs.
  position       bigint,
  time           timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- Whose data changed (tenant code); for a failed login the attempted one.
  tenant_id      text        NOT NULL,
  user_name      text        NOT NULL,
  user_tenant_id text        NOT NULL,
  action         text        NOT NULL,
  entity_type    text        NOT NULL,
  entity_id      text        NOT NULL,
  request_id     text,
  ip             text,
  changes        jsonb       NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX audit_log_position_key ON audit_log (position);
-- The sequencer's work list stays tiny: only records not yet positioned.
CREATE INDEX audit_log_unpositioned_idx ON audit_log (seq) WHERE position IS NULL;
-- Visibility is by tenant; the list filters by tenant and pages by position.
CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, position);
-- Retention deletes by age.
CREATE INDEX audit_log_time_idx ON audit_log (time);

-- The last position handed out. Its row lock serialises sequencer runs, and
-- positions are never reused, also after retention has purged every record.
CREATE TABLE audit_feed (
  id            integer PRIMARY KEY CHECK (id = 1),
  last_position bigint  NOT NULL
);
INSERT INTO audit_feed (id, last_position) VALUES (1, 0);

-- One sequencer run, in one round trip. VOLATILE matters: in READ COMMITTED
-- each statement of a volatile function takes a fresh snapshot, so the
-- UPDATE below sees every record committed before the lock was granted
-- (including the positions of the previous run), never an older picture.
CREATE FUNCTION audit_assign_positions(batch integer) RETURNS bigint
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
    RETURNING a.position
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
