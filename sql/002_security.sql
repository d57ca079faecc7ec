-- Security: login lockout and session revocation.

-- Lockout: a login_lock row now counts password evaluations *reserved*
-- before the password is checked (src/auth/auth.sql.ts reserveLoginAttempt), so the row
-- lock of one upsert serialises racing attempts on every node. Expired rows
-- are purged a bounded batch at a time; this index finds them.
CREATE INDEX IF NOT EXISTS login_lock_window_idx ON login_lock (window_start);

-- The platform tenant was bootstrapped with contact_phone '', which the
-- tenant schema refuses, so a GET of it could not be PUT back. '0' is the
-- shortest value the schema accepts.
UPDATE sys_tenant SET contact_phone = '0' WHERE contact_phone = '';
