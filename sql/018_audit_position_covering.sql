-- The superadmin's audit list with a userName (a substring of who acted)
-- walks the position index newest first and tests each record's user name
-- until the count's bound: about 3,000 records for 1,000 matches when one
-- record in three matches. Each test read the record from the table. The
-- position index now carries the user name and the time beside each
-- position, so that walk, and the time window's (src/audit/audit.sql.ts
-- windowPage), read the index alone, as the per-tenant index already does
-- for everyone else (sql/012_list_indexes.sql). It is the same index, a
-- little wider, not one more for the sequencer to write: its update adds a
-- record to this index whatever the index carries. On the development
-- machine the walk went from 0.57 to 0.47 ms per list call at a million
-- records (docs/benchmark.md).
DROP INDEX audit_log_position_key;
CREATE UNIQUE INDEX audit_log_position_key ON audit_log (position) INCLUDE (time, user_name) WHERE position IS NOT NULL;
