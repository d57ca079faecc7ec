-- The tenant list by page number without a filter (the platform's, in id
-- order): a page far down the list walks every live id before it, 10,000
-- for the last page at 10,000 tenants. 012's list index carries the
-- filters' columns beside each id (74 pages at 10,000 tenants); the ids
-- alone fill 30, and the walk to offset 10,000 took 0.48 ms instead of 0.68
-- (PostgreSQL 15, docs/benchmark.md). The planner takes this one where no
-- filter needs the other columns, 012's where one does.
CREATE INDEX sys_tenant_live_id_idx ON sys_tenant (id) WHERE del_flag = '0';
