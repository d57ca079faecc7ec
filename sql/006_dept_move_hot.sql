-- A move rewrites `ancestors` on every row of the moved subtree. PostgreSQL
-- updates a row in place (HOT: no new entry in any of the three indexes) only
-- when its new version fits on the same page. A page filled to 70% can take
-- new versions of about 40% of its rows, so a move of a whole big subtree
-- still paid the index insertions for the other 60%. Half-full pages take
-- all of them: a 100,000-department move went from 1.3 s to 0.55 s for the
-- UPDATE (bench big). The price is a table up to twice its packed size,
-- which the chart cache keeps away from reads. Applies to pages written
-- from now on (VACUUM FULL rewrites older ones).
ALTER TABLE sys_dept SET (fillfactor = 50);
