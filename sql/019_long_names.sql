-- Identity providers name groups and people as their directories do, at
-- more length than RuoYi's 30 characters (Entra ID's own test group names
-- do not fit in 30): a department's name (SCIM Group `displayName`) and a
-- user's display name (SCIM `displayName`) may be up to 100 characters,
-- through SCIM and the REST API alike (docs/api-rules.md#limits).
-- A tenant's contactUserName keeps its 30 (it is a text column; the limit
-- is the schema's).
-- Widening a varchar rewrites no rows and keeps the indexes on the column
-- (the sibling-name key): the stored values already fit.
ALTER TABLE sys_dept
  ALTER COLUMN dept_name TYPE varchar(100);

ALTER TABLE sys_user
  ALTER COLUMN nick_name TYPE varchar(100);
