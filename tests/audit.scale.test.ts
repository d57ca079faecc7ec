import { bumpTenantListVersion } from '../src/identity/tenant.version.js';
import type { Tx } from '../src/db/database.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, Client, type TestApp } from './support/app.js';
import { createTenantWithAdmin, type TenantWithAdmin } from './support/tenant-fixtures.js';
import { expectNewestCopy } from './support/invariants.js';
import { purgeAudit } from '../src/audit/audit.retention.js';

// docs/api-rules.md#paging and #audit-trail-and-change-feed, read across
// many tenants: an admin's pages merge the records of its tenants newest
// first, the change feed skips other tenants' records, the superadmin sees
// every record, and lists that outgrow 1,000 rows say that their total is a
// lower bound. bench/scale.bench.ts measures the same reads at 10,000
// tenants; this file holds the rules.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

interface Page<T> {
  total: number;
  totalExact: boolean;
  rows: T[];
}
interface AuditRecord {
  id: string;
  tenantId: string;
  action: string;
  userName: string;
}
interface TenantDto {
  id: string;
  tenantId: string;
}

async function page<T>(client: Client, path: string): Promise<Page<T>> {
  const res = await client.get(path);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as Page<T>;
}

/**
 * Writes records with positions after the last one handed out, as the
 * sequencer would leave them. The feed's row lock is held throughout, as the
 * sequencer holds it, so a sequencer run positioning the records of the
 * requests just made cannot hand out the same positions meanwhile; each
 * statement after the lock sees that run's committed last position.
 */
async function placedAfterFeed(insert: (tx: TestApp['sql']) => Promise<unknown>): Promise<void> {
  await t.sql.begin(async (tx) => {
    await tx`SELECT 1 FROM audit_feed WHERE id = 1 FOR UPDATE`;
    await insert(tx as unknown as TestApp['sql']);
    await tx`UPDATE audit_feed SET assigned_position = (SELECT max(position) FROM audit_log), last_position = (SELECT max(position) FROM audit_log) WHERE id = 1`;
    // Records loaded with positions: the time window's blocks widened once after the load (docs/operations.md).
    await tx`SELECT audit_time_blocks_rebuild()`;
  });
}

/** `count` positioned records of `tenantIds` (round-robin). */
async function positionedRecords(tenantIds: string[], count: number, action = 'dept.update'): Promise<void> {
  await placedAfterFeed(
    (tx) => tx`
      WITH f AS (SELECT assigned_position AS last_position FROM audit_feed WHERE id = 1)
      INSERT INTO audit_log (position, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, changes)
      SELECT f.last_position + g, (${tenantIds}::text[])[1 + g % ${tenantIds.length}], 'bulk', '000000', ${action}, 'dept', g::text, '{}'
      FROM f, generate_series(1, ${count}) g`,
  );
}

describe('an admin reading across its tenants', () => {
  let top: TenantWithAdmin;
  let mid: TenantWithAdmin;
  let leaf: TenantWithAdmin;
  let other: TenantWithAdmin;

  beforeAll(async () => {
    // 000000 > top > mid > leaf, and `other` beside top, whose records interleave with theirs.
    top = await createTenantWithAdmin(t, t.root, { tenantName: 'ScaleTop' });
    mid = await createTenantWithAdmin(t, top.admin, { tenantName: 'ScaleMid' });
    leaf = await createTenantWithAdmin(t, mid.admin, { tenantName: 'ScaleLeaf' });
    other = await createTenantWithAdmin(t, t.root, { tenantName: 'ScaleOther' });
    await positionedRecords([other.tenantId, mid.tenantId, other.tenantId, leaf.tenantId, other.tenantId, other.tenantId], 60);
  });

  it("pages an admin's records newest first across its tenants, the same rows the superadmin sees for them", async () => {
    const mine = new Set([mid.tenantId, leaf.tenantId]);
    const everything = await page<AuditRecord>(t.root, '/system/audit-api/list?pageSize=1000');
    const expected = everything.rows.filter((r) => mine.has(r.tenantId)).map((r) => r.id);
    expect(expected.length).toBeGreaterThan(20);
    const paged: string[] = [];
    for (let p = 1; paged.length < expected.length + 1 && p < 50; p++) {
      const got = await page<AuditRecord>(mid.admin, `/system/audit-api/list?pageSize=7&pageNum=${p}`);
      expect(got).toMatchObject({ total: expected.length, totalExact: true });
      if (got.rows.length === 0) break;
      paged.push(...got.rows.map((r) => r.id));
    }
    expect(paged).toEqual(expected);
    // Filters apply within each tenant's run.
    const leafOnly = await page<AuditRecord>(mid.admin, `/system/audit-api/list?pageSize=1000&tenantId=${leaf.tenantId}&userName=bulk`);
    expect(leafOnly.rows.length).toBe(10);
    expect(leafOnly.rows.every((r) => r.tenantId === leaf.tenantId)).toBe(true);
  });

  it('follows the change feed from a cursor with only its tenants, in order, past the records of others', async () => {
    const mine = new Set([mid.tenantId, leaf.tenantId]);
    const all = (await page<AuditRecord>(t.root, '/system/audit-api/list?pageSize=1000')).rows.reverse();
    const start = all[Math.floor(all.length / 3)]!.id;
    const expected = all.filter((r) => mine.has(r.tenantId) && BigInt(r.id) > BigInt(start)).map((r) => r.id);
    const got: string[] = [];
    let cursor = start;
    for (let i = 0; i < 100; i++) {
      const res = await mid.admin.get(`/system/audit-api/changes?after=${cursor}&limit=4`);
      expect(res.status).toBe(200);
      const { events, cursor: next } = res.body.data as { events: AuditRecord[]; cursor: string };
      got.push(...events.map((e) => e.id));
      cursor = next;
      if (events.length < 4) break;
    }
    expect(got).toEqual(expected);
  });

  it("keeps an admin's time window to its tenants' records inside it, newest first, as the superadmin's", async () => {
    // Records of one day long ago, of an outside tenant and of the admin's, interleaved; and one each side of that day.
    await placedAfterFeed(
      (tx) => tx`
        WITH f AS (SELECT assigned_position AS last_position FROM audit_feed WHERE id = 1)
        INSERT INTO audit_log (position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, changes)
        SELECT f.last_position + g, ${new Date(2001, 1, 3)}::timestamptz + make_interval(hours => g - 2),
          (${[other.tenantId, mid.tenantId, leaf.tenantId]}::text[])[1 + g % 3], 'window', '000000', 'dept.update', 'dept', g::text, '{}'
        FROM f, generate_series(1, 27) g`,
    );
    const day = await page<AuditRecord>(t.root, '/system/audit-api/list?pageSize=100&beginTime=2001-02-03&endTime=2001-02-03&userName=window');
    // Hours -1 to 25 after the day's start in the server's time zone: the day holds hours 0 to 23.
    expect(day.rows).toHaveLength(24);
    const mine = day.rows.filter((r) => r.tenantId === mid.tenantId || r.tenantId === leaf.tenantId);
    expect(mine.length).toBe(16);
    for (const pageSize of [100, 5]) {
      const got: string[] = [];
      for (let p = 1; p <= 4; p++) {
        const res = await page<AuditRecord>(
          mid.admin,
          `/system/audit-api/list?pageSize=${pageSize}&pageNum=${p}&beginTime=2001-02-03&endTime=2001-02-03`,
        );
        expect(res).toMatchObject({ total: 16, totalExact: true });
        got.push(...res.rows.map((r) => r.id));
      }
      expect(got).toEqual(mine.map((r) => r.id));
    }
  });

  it('shows the superadmin a failed login that named a tenant which does not exist; no admin sees it', async () => {
    const res = await t.anon.post('/auth/login', { tenantId: '999998', username: 'nobody', password: 'wrong-password' });
    expect(res.status).toBe(401);
    const seen = await page<AuditRecord>(t.root, '/system/audit-api/list?tenantId=999998');
    expect(seen.rows).toMatchObject([{ tenantId: '999998', action: 'auth.login_failed', userName: 'nobody' }]);
    expect((await page<AuditRecord>(top.admin, '/system/audit-api/list?tenantId=999998')).rows).toEqual([]);
  });
});

describe('lists past 1,000 rows', () => {
  it('count the audit trail up to 1,000 or the end of the page asked for, then say the total is a lower bound', async () => {
    const big = await createTenantWithAdmin(t, t.root, { tenantName: 'ScaleBig' });
    await positionedRecords([big.tenantId], 1_006, 'dept.create');
    for (const client of [t.root, big.admin]) {
      const first = await page<AuditRecord>(client, `/system/audit-api/list?tenantId=${big.tenantId}&action=dept.create`);
      expect(first).toMatchObject({ total: 1_000, totalExact: false });
      expect(first.rows).toHaveLength(10);
      // Page 101 ends at row 1,010: counting goes that far, so the total is exact again
      // (1,006 and the provisioned root department's record).
      const last = await page<AuditRecord>(client, `/system/audit-api/list?tenantId=${big.tenantId}&action=dept.create&pageNum=101`);
      expect(last).toMatchObject({ total: 1_007, totalExact: true });
      expect(last.rows).toHaveLength(7);
      // Page 100 ends at row 1,000, and row 1,001 exists: a lower bound. Past the end: no rows, the exact total.
      expect(await page<AuditRecord>(client, `/system/audit-api/list?tenantId=${big.tenantId}&action=dept.create&pageNum=100`)).toMatchObject({
        total: 1_000,
        totalExact: false,
      });
      for (const beyond of ['pageNum=102', 'pageNum=1000&pageSize=1000']) {
        const none = await page<AuditRecord>(client, `/system/audit-api/list?tenantId=${big.tenantId}&action=dept.create&${beyond}`);
        expect(none, beyond).toEqual({ total: 1_007, totalExact: true, rows: [] });
      }
      // Below the bound, exact as before.
      const few = await page<AuditRecord>(client, `/system/audit-api/list?tenantId=${big.tenantId}&action=tenant.delete`);
      expect(few).toMatchObject({ total: 0, totalExact: true, rows: [] });
    }
  });

  it("page the superadmin's whole trail newest first by position across tenants, and count it the same way", async () => {
    // On Citus this list is walked in the list of positions, and each page's records read from their tenants' shards.
    const a = await createTenantWithAdmin(t, t.root, { tenantName: 'TrailA' });
    const b = await createTenantWithAdmin(t, t.root, { tenantName: 'TrailB' });
    const all = (query: string) => page<AuditRecord>(t.root, `/system/audit-api/list?${query}`);
    await all('pageSize=1'); // a read waits for the sequencer's run: the tenants' own records are positioned by then
    await positionedRecords([a.tenantId, b.tenantId, '000000'], 1_006, 'dept.move');
    const [trail] = await t.sql<{ ids: string[]; tenants: string[]; n: number }[]>`
      SELECT array_agg(position::text ORDER BY position DESC) AS ids, array_agg(tenant_id ORDER BY position DESC) AS tenants,
        (SELECT count(*)::int FROM audit_log WHERE position IS NOT NULL) AS n
      FROM (SELECT position, tenant_id FROM audit_log WHERE position IS NOT NULL ORDER BY position DESC LIMIT 1020) newest`;
    const first = await all('pageSize=10');
    expect(first).toMatchObject({ total: 1_000, totalExact: false });
    expect(first.rows.map((r) => [r.id, r.tenantId])).toEqual(trail!.ids.slice(0, 10).map((id, i) => [id, trail!.tenants[i]]));
    expect(new Set(first.rows.map((r) => r.tenantId)).size).toBe(3);
    expect((await all('pageSize=7&pageNum=50')).rows.map((r) => r.id)).toEqual(trail!.ids.slice(343, 350));
    // Past the first 1,000: counted to the end of the page asked for.
    const deep = await all('pageSize=10&pageNum=101');
    expect(deep.rows.map((r) => r.id)).toEqual(trail!.ids.slice(1_000, 1_010));
    expect(deep).toMatchObject(trail!.n > 1_010 ? { total: 1_010, totalExact: false } : { total: trail!.n, totalExact: true });
    await expectNewestCopy(t.sql);

    // Five records past the retention period at the top of the trail: the purge deletes them from the copy of the
    // newest records too, and fills it again from the records below them, so the pages move up by five.
    await placedAfterFeed(
      (tx) => tx`
        WITH f AS (SELECT assigned_position AS last_position FROM audit_feed WHERE id = 1)
        INSERT INTO audit_log (position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, changes)
        SELECT f.last_position + g, now() - make_interval(days => 400), ${b.tenantId}, 'expired', '000000', 'dept.move', 'dept', g::text, '{}'
        FROM f, generate_series(1, 5) g`,
    );
    expect((await all('pageSize=5')).rows.map((r) => r.userName)).toEqual(Array(5).fill('expired'));
    expect(await purgeAudit(t.appSql, 365)).toBeGreaterThanOrEqual(5);
    const [left] = await t.sql<{ ids: string[] }[]>`
      SELECT array_agg(position::text ORDER BY position DESC) AS ids
      FROM (SELECT position FROM audit_log WHERE position IS NOT NULL ORDER BY position DESC LIMIT 1000) newest`;
    expect(left!.ids.slice(0, 995)).toEqual(trail!.ids.slice(0, 995));
    expect((await all('pageSize=10&pageNum=100')).rows.map((r) => r.id)).toEqual(left!.ids.slice(990, 1_000));
    expect(await all('pageSize=10&pageNum=100')).toMatchObject({ total: 1_000, totalExact: false });
    await expectNewestCopy(t.sql);
  });

  it("page the superadmin's time window newest first by position, even where the times run the other way, and count it the same way", async () => {
    // 1,006 records on one day long ago, each a minute earlier than the one positioned before it:
    // the day's page is the highest positions, not the latest times.
    await placedAfterFeed(
      (tx) => tx`
        WITH f AS (SELECT assigned_position AS last_position FROM audit_feed WHERE id = 1)
        INSERT INTO audit_log (position, time, tenant_id, user_name, user_tenant_id, action, entity_type, entity_id, changes)
        SELECT f.last_position + g, ${new Date(2002, 2, 4)}::timestamptz + make_interval(mins => 1006 - g),
          '000000', 'day', '000000', 'dept.update', 'dept', g::text, '{}'
        FROM f, generate_series(1, 1006) g`,
    );
    const [window] = await t.sql<{ ids: string[] }[]>`
      SELECT array_agg(position::text ORDER BY position DESC) AS ids FROM audit_log WHERE user_name = 'day'`;
    const ids = window!.ids;
    const day = (query: string) => page<AuditRecord>(t.root, `/system/audit-api/list?beginTime=2002-03-04&endTime=2002-03-04&${query}`);
    const first = await day('pageSize=10');
    expect(first).toMatchObject({ total: 1_000, totalExact: false });
    expect(first.rows.map((r) => r.id)).toEqual(ids.slice(0, 10));
    const middle = await day('pageSize=7&pageNum=50');
    expect(middle).toMatchObject({ total: 1_000, totalExact: false });
    expect(middle.rows.map((r) => r.id)).toEqual(ids.slice(343, 350));
    // Page 101 ends at row 1,010: counted that far, exact; page 100 ends at 1,000 with more after it.
    const last = await day('pageSize=10&pageNum=101');
    expect(last).toMatchObject({ total: 1_006, totalExact: true });
    expect(last.rows.map((r) => r.id)).toEqual(ids.slice(1_000));
    expect(await day('pageSize=10&pageNum=100')).toMatchObject({ total: 1_000, totalExact: false });
    for (const beyond of ['pageNum=102', 'pageNum=1000&pageSize=1000']) {
      expect(await day(beyond), beyond).toEqual({ total: 1_006, totalExact: true, rows: [] });
    }
    // Part of the day (its last 10 minutes hold the first 10 positions), and with a filter that has its own index.
    const late = await page<AuditRecord>(t.root, '/system/audit-api/list?beginTime=2002-03-04 16:36:00&endTime=2002-03-04 23:59:59&pageSize=4');
    expect(late).toMatchObject({ total: 10, totalExact: true });
    expect(late.rows.map((r) => r.id)).toEqual(ids.slice(996, 1_000));
    const filtered = await day('pageSize=3&action=dept.update&userName=day');
    expect(filtered).toMatchObject({ total: 1_000, totalExact: false });
    expect(filtered.rows.map((r) => r.id)).toEqual(ids.slice(0, 3));

    // Three records written now, positioned after the day's: a window from that day to tomorrow, and one
    // with no end, hold them and the day's, newest first by position.
    await positionedRecords(['000000'], 3, 'dept.delete');
    const [newest] = await t.sql<{ ids: string[] }[]>`
      SELECT array_agg(position::text ORDER BY position DESC) AS ids FROM (SELECT position FROM audit_log ORDER BY position DESC LIMIT 5) n`;
    const later = new Date(Date.now() + 86_400_000);
    const tomorrow = `${later.getFullYear()}-${String(later.getMonth() + 1).padStart(2, '0')}-${String(later.getDate()).padStart(2, '0')}`;
    for (const window of [`beginTime=2002-03-04&endTime=${tomorrow}`, 'beginTime=2002-03-04']) {
      const upToNow = await page<AuditRecord>(t.root, `/system/audit-api/list?${window}&pageSize=5`);
      expect(upToNow, window).toMatchObject({ total: 1_000, totalExact: false });
      expect(upToNow.rows.map((r) => r.id)).toEqual(newest!.ids);
      expect(newest!.ids.slice(3)).toEqual(ids.slice(0, 2));
    }
    // A window with an end and no start: everything before the end, newest first by position (the day's first
    // 996 minutes hold its highest positions).
    const [upTo] = await t.sql<{ ids: string[] }[]>`
      SELECT array_agg(position::text ORDER BY position DESC) AS ids
      FROM (SELECT position FROM audit_log WHERE position IS NOT NULL AND time < ${new Date(2002, 2, 4, 16, 36)} ORDER BY position DESC LIMIT 6) n`;
    const endOnly = await page<AuditRecord>(t.root, '/system/audit-api/list?endTime=2002-03-04 16:35:59&pageSize=6');
    expect(endOnly.rows.map((r) => r.id)).toEqual(upTo!.ids);
    expect(upTo!.ids).toEqual(ids.slice(0, 6));
  });

  it('count the tenant list the same way; an admin of a small tenant elsewhere still sees only its own', async () => {
    const big = await createTenantWithAdmin(t, t.root, { tenantName: 'ScaleWide' });
    const small = await createTenantWithAdmin(t, t.root, { tenantName: 'ScaleSmall' });
    const [parent] = await t.sql<{ path: string }[]>`SELECT ancestors || ',' || tenant_id AS path FROM sys_tenant WHERE tenant_id = ${big.tenantId}`;
    await t.sql`
      INSERT INTO sys_tenant (tenant_parent, ancestors, tenant_name, company_name, contact_user_name, contact_phone, create_by)
      SELECT ${big.tenantId}, ${parent!.path}, 'Wide ' || g, 'Wide company ' || g || ' ' || ${big.tenantId}, 'C', '1', 'test'
      FROM generate_series(1, 1005) g`;
    // What a program writing sys_tenant in SQL keeps beside it (docs/operations.md): the names' trigrams and the rows' version.
    await t.sql`
      INSERT INTO sys_tenant_name_gram (gram, id)
      SELECT g, w.id FROM sys_tenant w, tenant_name_grams(w.tenant_name) g WHERE w.tenant_parent = ${big.tenantId}`;
    await bumpTenantListVersion(t.sql as unknown as Tx);
    // The tenant itself and 1,005 below it.
    const first = await page<TenantDto>(big.admin, '/system/tenant-api/list?pageSize=10');
    expect(first).toMatchObject({ total: 1_000, totalExact: false });
    expect(first.rows).toHaveLength(10);
    const last = await page<TenantDto>(big.admin, '/system/tenant-api/list?pageSize=10&pageNum=101');
    expect(last).toMatchObject({ total: 1_006, totalExact: true });
    expect(last.rows).toHaveLength(6);
    // The deep pages hold the right rows, in id order: page 100 and 101 are the last 16 of the subtree.
    const ids = await t.sql<{ id: string }[]>`
      SELECT id::text AS id FROM sys_tenant WHERE tenant_id = ${big.tenantId} OR tenant_parent = ${big.tenantId} ORDER BY id`;
    const page100 = await page<TenantDto>(big.admin, '/system/tenant-api/list?pageSize=10&pageNum=100');
    expect(page100).toMatchObject({ total: 1_000, totalExact: false });
    expect([...page100.rows, ...last.rows].map((r) => r.id)).toEqual(ids.slice(-16).map((r) => r.id));
    for (const beyond of ['pageNum=102', 'pageNum=1000&pageSize=1000']) {
      expect(await page<TenantDto>(big.admin, `/system/tenant-api/list?${beyond}`), beyond).toEqual({ total: 1_006, totalExact: true, rows: [] });
    }
    // By cursor, the same rows; the total counts the tenants after the cursor, under the same bound.
    const afterCursor = await page<TenantDto>(big.admin, `/system/tenant-api/list?pageSize=10&after=${ids.at(-17)!.id}`);
    expect(afterCursor).toMatchObject({ total: 16, totalExact: true });
    expect(afterCursor.rows.map((r) => r.id)).toEqual(page100.rows.map((r) => r.id));
    expect(await page<TenantDto>(big.admin, `/system/tenant-api/list?pageSize=10&after=${ids[2]!.id}`)).toMatchObject({
      total: 1_000,
      totalExact: false,
    });
    const named = await page<TenantDto>(big.admin, `/system/tenant-api/list?tenantName=${encodeURIComponent('Wide 100')}`);
    // "Wide 100" and "Wide 1000" to "Wide 1005".
    expect(named).toMatchObject({ total: 7, totalExact: true });
    // A name filter reads one of two ways (src/tenants/tenant.sql.ts, rareGramOf): "Wide" and "ide" are each held by
    // more than 500 of these names, so the list walks every name; the others have a trigram few names hold ("100",
    // "005", " 99"), so only those names are tested. Both ways find what LIKE finds, first page and count alike.
    for (const needle of ['Wide', 'ide', 'Wide 1', 'Wide 100', 'ide 1005', 'e 99', '05', 'Wide 2000']) {
      const [truth] = await t.sql<{ n: number; first: string[] }[]>`
        SELECT count(*)::int AS n, (array_agg(id::text ORDER BY id))[1:10] AS first FROM sys_tenant
        WHERE del_flag = '0' AND (tenant_id = ${big.tenantId} OR tenant_parent = ${big.tenantId}) AND strpos(tenant_name, ${needle}) > 0`;
      const found = await page<TenantDto>(big.admin, `/system/tenant-api/list?pageSize=10&tenantName=${encodeURIComponent(needle)}`);
      expect(found, needle).toMatchObject(truth!.n > 1_000 ? { total: 1_000, totalExact: false } : { total: truth!.n, totalExact: true });
      expect(
        found.rows.map((r) => r.id),
        needle,
      ).toEqual(truth!.first ?? []);
    }
    expect(await page<TenantDto>(small.admin, '/system/tenant-api/list')).toMatchObject({
      total: 1,
      totalExact: true,
      rows: [{ tenantId: small.tenantId }],
    });
    expect((await page<TenantDto>(t.root, '/system/tenant-api/list')).totalExact).toBe(false);
  });
});
