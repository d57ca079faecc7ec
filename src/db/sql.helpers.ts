import type { Db } from './database.js';
import type { Fragment } from './page.js';

/**
 * The lists' substring filters (`deptName`, `userName`, `tenantName`, the
 * audit list's `userName`): `column` contains `needle`, case and all.
 * strpos rather than LIKE: none of the client's characters is a wildcard, so
 * nothing needs escaping; and PostgreSQL prices a LIKE pattern given as a
 * parameter as matching almost nothing, which on a big table had a prepared
 * statement planned anew on every request (docs/benchmark.md).
 */
export const contains = (sql: Db, column: Fragment, needle: string): Fragment => sql`strpos(${column}, ${needle}) > 0`;
