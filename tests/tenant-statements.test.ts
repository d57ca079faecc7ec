import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Database } from '../src/db/database.js';
import { ALLOWLIST, conjuncts, judgeStatements, type Allowed } from './support/tenant-statements.js';
import { openTestDatabase } from './support/test-database.js';

// The judge of the tenant-filter check (docs/scale-out.md#the-check), on a
// real migrated database: it passes what it should, and it can fail. The
// run's own check of every recorded statement is the global teardown's.
// On a Citus cluster there is no plan of PostgreSQL's to judge: Citus itself
// refuses a statement that would run on several shards (src/db/citus.ts).
const onCitus = inject('citusNodes') !== '';

let db: Database;

beforeAll(async () => {
  db = await openTestDatabase();
});
afterAll(async () => db?.close());

const judge = async (text: string, allowlist: readonly Allowed[] = []) => (await judgeStatements(db.sql, [text], allowlist))[0]!;
const passes = async (text: string) => expect((await judge(text)).problems).toEqual([]);
const fails = async (text: string, problem: RegExp) => {
  const verdict = await judge(text);
  expect(verdict.problems.join('\n')).toMatch(problem);
  expect(verdict.allowedBecause).toBeUndefined();
};

describe.skipIf(onCitus)('a statement on a tenant-owned table', () => {
  it('fails without a tenant filter', async () => {
    await fails('SELECT dept_name FROM sys_dept WHERE dept_id = $1', /scan of sys_dept sys_dept without tenant_id/);
  });

  it('passes with tenant_id = a parameter or a constant, in reads, updates and deletes', async () => {
    await passes('SELECT dept_name FROM sys_dept WHERE tenant_id = $1 AND dept_id = $2');
    await passes("SELECT count(*) FROM sys_user WHERE tenant_id = '000000'");
    await passes('UPDATE sys_dept SET status = $1 WHERE tenant_id = $2 AND parent_id = $3');
    await passes('DELETE FROM login_lock WHERE tenant_id = $1 AND user_name = $2');
  });

  it('fails when the tenant filter could match several tenants: under OR, = ANY, or a range', async () => {
    await fails('SELECT dept_id FROM sys_dept WHERE tenant_id = $1 OR dept_id = $2', /scan of sys_dept/);
    await fails('SELECT dept_id FROM sys_dept WHERE tenant_id = ANY($1::text[])', /scan of sys_dept/);
    await fails('SELECT dept_id FROM sys_dept WHERE tenant_id > $1', /scan of sys_dept/);
  });

  it('fails when tenant_id is only named, not filtered', async () => {
    await fails('SELECT tenant_id, dept_id FROM sys_dept WHERE tenant_id IS NOT NULL', /scan of sys_dept/);
  });

  it('passes when it joins through a row already filtered by tenant, in a join or a correlated subquery', async () => {
    await passes(`
      SELECT u.user_name FROM sys_user u JOIN sys_dept d ON d.tenant_id = u.tenant_id AND d.dept_id = u.dept_id
      WHERE d.tenant_id = $1`);
    await passes(`
      SELECT s.session_id, (SELECT u.user_name FROM sys_user u WHERE u.tenant_id = s.tenant_id AND u.user_id = s.user_id)
      FROM auth_session s WHERE s.tenant_id = $1 AND s.session_id = $2`);
  });

  it("passes a tenant subquery on sys_tenant that names one tenant (a user's audit list)", async () => {
    await passes(`
      SELECT count(*) FROM audit_log a
      WHERE a.position IS NOT NULL AND a.tenant_id IN (SELECT s.tenant_id FROM sys_tenant s WHERE s.tenant_id = $1)`);
  });

  it('fails when the tenant is computed by a subquery when the statement runs', async () => {
    await fails('SELECT dept_id FROM sys_dept WHERE tenant_id = (SELECT tenant_id FROM sys_tenant WHERE id = $1)', /scan of sys_dept/);
  });

  it("fails when it joins only through a reference table's row", async () => {
    await fails(
      `SELECT t.account_count, (SELECT count(*) FROM sys_user u WHERE u.tenant_id = t.tenant_id) FROM sys_tenant t WHERE t.tenant_id = $1`,
      /scan of sys_user u without tenant_id/,
    );
  });

  it('passes an INSERT of one tenant, fails one whose tenant_id comes from the data', async () => {
    await passes('INSERT INTO login_lock (tenant_id, user_name, failures, window_start) VALUES ($1, $2, 1, now())');
    await passes(`
      INSERT INTO audit_log (tenant_id, user_name, user_tenant_id, action, entity_type, entity_id)
      SELECT $1, r.u, r.u, 'a', 'b', 'c' FROM jsonb_to_recordset($2::jsonb) AS r(u text)`);
    await fails(
      `INSERT INTO audit_log (tenant_id, user_name, user_tenant_id, action, entity_type, entity_id)
       SELECT r.t, r.u, r.u, 'a', 'b', 'c' FROM jsonb_to_recordset($1::jsonb) AS r(t text, u text)`,
      /INSERT INTO audit_log with tenant_id r\.t/,
    );
    await fails(
      `INSERT INTO login_lock (tenant_id, user_name, failures, window_start) VALUES ($1, $2, 1, now()), ($3, $4, 1, now())`,
      /INSERT INTO login_lock/,
    );
  });

  it('fails what a plan cannot show: a call of our functions, several statements in one text', async () => {
    await fails('SELECT audit_time_blocks_rebuild()', /calls audit_time_blocks_rebuild\(\)/);
    await fails('SELECT 1; DELETE FROM sys_dept WHERE dept_id = 1', /cannot be prepared/);
  });
});

describe.skipIf(onCitus)('what else it judges', () => {
  it('passes transaction control, reference tables and the system catalogs', async () => {
    await passes('BEGIN');
    await passes('SET LOCAL statement_timeout = 0');
    await passes('SELECT tenant_name FROM sys_tenant WHERE tenant_parent = $1');
    await passes("SELECT oid FROM pg_catalog.pg_type WHERE typname = 'int8'");
  });

  it('fails a table that is in neither list', async () => {
    await db.sql`CREATE TABLE unlisted_probe (tenant_id text, n int)`;
    await fails('SELECT n FROM unlisted_probe WHERE tenant_id = $1', /unlisted_probe is neither tenant-owned nor a reference table/);
  });

  it('lets an allowlist entry pass its statement, and only for the tables it names', async () => {
    const entry: Allowed = { statement: /^SELECT count\(\*\) FROM audit_log/, unpinned: ['audit_log'], reason: 'a test' };
    expect((await judge('SELECT count(*) FROM audit_log WHERE time < $1', [entry])).allowedBecause).toBe('a test');
    const joined = await judge('SELECT count(*) FROM audit_log a JOIN sys_user u ON u.user_name = a.user_name', [entry]);
    expect(joined.allowedBecause).toBeUndefined();
    expect(joined.problems.join('\n')).toMatch(/scan of sys_user u/);
  });

  it('gives every entry of the real allowlist a reason', () => {
    for (const entry of ALLOWLIST) expect(entry.reason.length).toBeGreaterThan(20);
  });

  it('splits conditions at the top-level AND only', () => {
    expect(conjuncts('((a.tenant_id = $1) AND (a.x = 2))')).toEqual(['a.tenant_id = $1', 'a.x = 2']);
    expect(conjuncts("((a.tenant_id = $1) OR (a.name = ' AND '))")).toEqual(["(a.tenant_id = $1) OR (a.name = ' AND ')"]);
  });
});
