// `npm run bench -- quota`: consumes per second, the built service beside
// the bare stack's guarded UPDATE (bench/baseline.server.ts), each side on
// its own tenants, in interleaved rounds (bench/harness/): all connections
// on one counter of one tenant (every consume queues on one row), then
// spread over QUOTA_TENANTS tenants. Then a package's menu change reaching
// PACKAGE_TENANTS tenants, timed. Every consume must succeed (the limits are
// far above what a run consumes); nothing here asserts a time.
//
// BENCH_PACKAGE_TENANTS (10,000; BENCH_SHORT 500): the tenants on the package.
// BENCH_ONLY=one, spread or package: that part alone.

import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Sql } from '../src/db/database.js';
import { prepare } from './harness/database.js';
import { startBoth } from './harness/pair.js';
import { stopAll } from './harness/processes.js';
import { cannon, CONNECTIONS, interleaved, ROUNDS, SECONDS, SHORT } from './harness/rounds.js';
import { fmt, median } from './harness/stats.js';

const QUOTA_TENANTS = 50;
const PACKAGE_TENANTS = Number(process.env.BENCH_PACKAGE_TENANTS ?? (SHORT ? 500 : 10_000));
/** A limit no run reaches, so every consume succeeds. */
const LIMIT = 2_000_000_000;
const PACKAGE_CHANGES = SHORT ? 1 : 5;

interface QuotaRows {
  service: string[];
  baseline: string[];
  packageId: string;
}

/**
 * QUOTA_TENANTS tenants per side with a riskReport limit of LIMIT (the
 * baseline's with their usage rows made, which its UPDATE needs), and
 * PACKAGE_TENANTS tenants on one package with menus "1,2,3".
 */
async function seedQuota(sql: Sql): Promise<QuotaRows> {
  const tenants = async (first: number, count: number, extra: Record<string, unknown> = {}) =>
    (
      await sql<{ tenantId: string }[]>`
        INSERT INTO sys_tenant (tenant_id, tenant_parent, ancestors, tenant_name, company_name, contact_user_name, contact_phone,
                                risk_report, package_id, menu_ids, create_by)
        SELECT (${first}::int + i)::text, '000000', '000000', 'Bench ' || (${first}::int + i), 'Bench Co ' || (${first}::int + i), 'Bench', '+86 138',
               ${LIMIT}, ${(extra.packageId as string | undefined) ?? null}::bigint, ${(extra.menuIds as string | undefined) ?? ''}, 'bench'
        FROM generate_series(0, ${count - 1}::int) i ORDER BY i
        RETURNING tenant_id AS "tenantId"`
    ).map((r) => r.tenantId);
  const service = await tenants(700_000, QUOTA_TENANTS);
  const baseline = await tenants(710_000, QUOTA_TENANTS);
  await sql`
    INSERT INTO quota_usage (tenant_id, counter, period_start, used, last_limit)
    SELECT t, 'riskReport', current_date, 0, ${LIMIT} FROM unnest(${baseline}::text[]) t`;
  const [pkg] = await sql<{ packageId: string }[]>`
    INSERT INTO sys_package (package_name, menu_ids, create_by) VALUES ('Bench package', '1,2,3', 'bench') RETURNING package_id::text AS "packageId"`;
  await tenants(600_000, PACKAGE_TENANTS, { packageId: pkg!.packageId, menuIds: '1,2,3' });
  await sql`SELECT setval('sys_tenant_code_seq', 720000)`;
  await sql`ANALYZE sys_tenant`;
  return { service, baseline, packageId: pkg!.packageId };
}

export async function quota(): Promise<void> {
  const prepared = await prepare(100, randomBytes(32).toString('hex'), seedQuota);
  try {
    const { service, baseline, headers } = await startBoth(prepared);
    const rows = prepared.extra;
    console.log(`database: ${prepared.description}`);
    console.log(`${ROUNDS} interleaved rounds of ${SECONDS} s, ${CONNECTIONS} connections; ${PACKAGE_TENANTS} tenants on the package`);
    const peaks = { service: 0, baseline: 0 };
    const tenantsOf = (port: number) => (port === service.port ? rows.service : rows.baseline);
    let sent = 0;
    // A new Idempotency-Key for every consume, as a client sends for each operation (the baseline ignores it).
    const run = (spread: boolean) => (port: number, pid: number | undefined, seconds: number) =>
      cannon(port, '/', headers, seconds, pid, {
        method: 'POST',
        path: () => `/system/quota-api/${tenantsOf(port)[spread ? sent % QUOTA_TENANTS : 0]}/consume`,
        headers: () => ({ 'idempotency-key': `bench-${port}-${++sent}` }),
        body: () => ({ counter: 'riskReport', amount: 1 }),
      });
    const only = process.env.BENCH_ONLY;
    if (!only || only === 'one') await interleaved('consume, one counter', { service, baseline }, peaks, run(false));
    if (!only || only === 'spread') await interleaved(`consume, ${QUOTA_TENANTS} tenants`, { service, baseline }, peaks, run(true));
    console.log(`${sent} consumes sent`);
    if (only && only !== 'package') return;

    // A package's menu change reaching every tenant on it, in one transaction (docs/api-rules.md#packages).
    const times: number[] = [];
    for (let i = 0; i < PACKAGE_CHANGES; i++) {
      const menuIds = i % 2 === 0 ? '1,2,3,4' : '1,2,3';
      const start = performance.now();
      const res = await fetch(`http://127.0.0.1:${service.port}/system/package-api`, {
        method: 'PUT',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ packageId: rows.packageId, packageName: 'Bench package', menuIds }),
      });
      const ms = performance.now() - start;
      if (res.status !== 200) throw new Error(`package change: ${res.status} ${await res.text()}`);
      times.push(ms);
      console.log(`package change ${i + 1} (menus -> ${menuIds}) reaching ${PACKAGE_TENANTS} tenants: ${fmt(ms)} ms`);
    }
    console.log(`package change reaching ${PACKAGE_TENANTS} tenants: median ${fmt(median(times))} ms (${times.map((t) => fmt(t)).join(', ')})`);
    console.log(`service rss: peak ${fmt(peaks.service)} MiB | baseline rss: peak ${fmt(peaks.baseline)} MiB`);
  } finally {
    await stopAll();
    await prepared.cleanup();
  }
}
