-- Audit trail and change feed (DECISIONS §10).
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
