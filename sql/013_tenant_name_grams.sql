-- The tenant list's name filter (tenantName, a substring, LIKE '%...%')
-- when few tenants match. A substring has no B-tree index to start from, so
-- the list walked every live tenant's name: at 10,000 tenants, a name that
-- one tenant matches cost the walk of all 10,000. Every name that contains
-- the needle contains each of the needle's three-character pieces
-- (trigrams), so the tenants holding the needle's rarest trigram are a
-- superset of the matches; when that trigram is rare, the list tests only
-- those tenants (src/tenants/tenant.sql.ts, nameCandidates).
--
-- Core PostgreSQL only (no pg_trgm, a contrib extension not every server or
-- PGlite carries), and the service, not the planner, chooses between the
-- two reads: it counts how many tenants hold each trigram of the needle, up
-- to a bound, before it reads.

-- A name's distinct trigrams, by character (not byte), case as written: the
-- LIKE filter is case-sensitive. A name of fewer than three characters has
-- none.
CREATE FUNCTION tenant_name_grams(name text) RETURNS SETOF text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT DISTINCT substr(name, i, 3) FROM generate_series(1, char_length(name) - 2) AS i $$;

-- Every tenant's trigrams, deleted tenants included (the list's own filter
-- leaves those out). Derived from sys_tenant and kept by the triggers below,
-- in the transaction that writes the tenant.
CREATE TABLE sys_tenant_name_gram (
  gram text NOT NULL,
  id bigint NOT NULL REFERENCES sys_tenant (id) ON DELETE CASCADE,
  PRIMARY KEY (gram, id)
);
-- A rename replaces the tenant's trigrams; a removed tenant loses them.
CREATE INDEX sys_tenant_name_gram_id_idx ON sys_tenant_name_gram (id);
-- The list reads this table only for a trigram that few tenants hold, so its
-- statement is planned for a trigram of a few holders. Left to its own
-- statistics, the planner expects a trigram's average holders (10,000
-- tenants' names: 80), finds the statement's generic plan dearer than a plan
-- for the one trigram, and plans it anew on every request (0.2 ms, about
-- what the read itself costs).
ALTER TABLE sys_tenant_name_gram ALTER COLUMN gram SET (n_distinct = -0.5);

CREATE FUNCTION sys_tenant_name_grams_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    DELETE FROM sys_tenant_name_gram WHERE id = NEW.id;
  END IF;
  INSERT INTO sys_tenant_name_gram (gram, id) SELECT g, NEW.id FROM tenant_name_grams(NEW.tenant_name) AS g;
  RETURN NULL;
END $$;

CREATE TRIGGER sys_tenant_name_grams_insert AFTER INSERT ON sys_tenant
  FOR EACH ROW EXECUTE FUNCTION sys_tenant_name_grams_write();
CREATE TRIGGER sys_tenant_name_grams_rename AFTER UPDATE OF tenant_name ON sys_tenant
  FOR EACH ROW WHEN (OLD.tenant_name IS DISTINCT FROM NEW.tenant_name) EXECUTE FUNCTION sys_tenant_name_grams_write();

INSERT INTO sys_tenant_name_gram (gram, id) SELECT g, t.id FROM sys_tenant AS t, tenant_name_grams(t.tenant_name) AS g;
