-- Indexes that answer the tenant and audit lists' walks without the table.
-- A list page is found by walking the sort keys alone (src/db/page.ts
-- keyedPageOf) and only the page's rows are read; an index that holds the
-- key and every column the WHERE tests lets that walk skip the table.

-- The tenant list, ordered by id: every live tenant's id with the columns
-- its filters and the scope rule test. Deep pages (offset 10,000) and a name
-- that few tenants match walk this instead of every wide tenant row.
CREATE INDEX sys_tenant_live_list_idx ON sys_tenant (id) INCLUDE (tenant_id, tenant_parent, status, tenant_name) WHERE del_flag = '0';

-- The audit list's entityType filter, newest first (as 011 did for
-- entity_id and action): a type that a tenth of the records have was found
-- by walking the whole log backwards and testing each row.
CREATE INDEX audit_log_entity_type_idx ON audit_log (entity_type, position) WHERE position IS NOT NULL;

-- A time window: the window's positions come from this index alone, then
-- the newest are kept. It replaces the plain (time) index, which retention
-- used and which every record's insert wrote: retention deletes positioned
-- records only, so it is served by this one, and the insert an audited write
-- waits for now writes one index fewer (the sequencer's update writes it,
-- as it writes every index of the row anyway).
DROP INDEX audit_log_time_idx;
CREATE INDEX audit_log_time_idx ON audit_log (time, position) WHERE position IS NOT NULL;

-- A caller who sees a few tenants has their records read per tenant from
-- this index, newest first. With the time and the user name in the index
-- entry, a time window or a userName filter passes over the records it does
-- not keep without reading their rows: a small tenant's records lie spread
-- among a million, about one table page each.
DROP INDEX audit_log_tenant_idx;
CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, position) INCLUDE (time, user_name) WHERE position IS NOT NULL;
