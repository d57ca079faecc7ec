-- The audit list's filters that name one value, for a caller who sees many
-- tenants (the platform admin): newest first, the position index walked
-- backwards keeps only the matching records, and a rare value (one
-- department's history by entityId, one action) made that walk read most of
-- the log. These indexes go straight to the value's records in position
-- order. Positioned records only: the sequencer adds each record to them
-- (its update already writes every index), the write's own insert does not.
CREATE INDEX audit_log_entity_idx ON audit_log (entity_id, position) WHERE position IS NOT NULL;
CREATE INDEX audit_log_action_idx ON audit_log (action, position) WHERE position IS NOT NULL;
