import type { Sql, Tx } from '../db/database.js';
import { serializePlatformWrites, transactionAcrossTenants } from '../db/citus.js';
import { recordAudit } from '../audit/audit.record.js';
import { readSource } from './ruoyi.source.js';
import { mapSource } from './ruoyi.map.js';
import { checkPlan } from './ruoyi.checks.js';
import { judgeAgainstTarget, type Judged } from './ruoyi.target.js';
import { moveSequences, writeDepts, writeDigests, writePackages, writeTenants, writeUsers } from './ruoyi.write.js';
import { KINDS, PLATFORM, type Kind, type Outcome, type Plan, type Planned } from './ruoyi.plan.js';

// `dept-tenant import-ruoyi` (docs/migrate-from-ruoyi.md): read the whole source,
// check it, judge it against the target, and only then, with no problem
// found, write what changed in one transaction.

/** What the command shows as it goes: a phase with its size, then steps through it. */
export interface Progress {
  phase(name: string, total: number): void;
  step(count?: number): void;
  done(): void;
}

type Counts = Record<Kind, Record<Outcome | 'skipped', number>>;

export interface ImportReport {
  plan: Plan;
  counts: Counts;
  /** Whether anything was (or, on a dry run, would be) written. */
  changes: boolean;
  written: boolean;
}

const ACTOR = { tenantId: PLATFORM, userName: 'import-ruoyi' };
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);

function countsOf(plan: Plan, judged: Judged): Counts {
  const counts = Object.fromEntries(KINDS.map((kind) => [kind, { imported: 0, updated: 0, unchanged: 0, skipped: plan.skipped[kind] }])) as Counts;
  for (const [p, outcome] of judged.outcomes) counts[p.kind][outcome]++;
  return counts;
}

/** The changed rows of each tenant, platform first (its packages and tenant rows come before the tenants' own). */
function byTenant(plan: Plan, judged: Judged) {
  const tenants = new Map<string, { depts: Planned<never>[]; users: Planned<never>[]; all: Planned<object>[] }>();
  const changed = (p: Planned<object>) => judged.outcomes.get(p) !== 'unchanged';
  const slot = (tenantId: string) => {
    let entry = tenants.get(tenantId);
    if (!entry) tenants.set(tenantId, (entry = { depts: [], users: [], all: [] }));
    return entry;
  };
  for (const p of [...plan.packages, ...plan.tenants, ...plan.depts, ...plan.users] as Planned<object>[]) {
    if (!changed(p)) continue;
    const entry = slot(p.tenantId);
    entry.all.push(p);
    if (p.kind === 'dept') entry.depts.push(p as never);
    if (p.kind === 'user') entry.users.push(p as never);
  }
  return tenants;
}

function largest(values: string[], limit: bigint): bigint {
  let max = 0n;
  for (const value of values) {
    const n = BigInt(value);
    if (n <= limit && n > max) max = n;
  }
  return max;
}

async function write(tx: Tx, plan: Plan, judged: Judged, progress: Progress): Promise<void> {
  await serializePlatformWrites(tx);
  const changed = byTenant(plan, judged);
  const rowsOf = <R>(rows: Planned<R>[]) => rows.filter((p) => judged.outcomes.get(p as Planned<object>) !== 'unchanged').map((p) => p.row);
  await writePackages(tx, rowsOf(plan.packages));
  await writeTenants(tx, rowsOf(plan.tenants));
  progress.phase('writing tenants', changed.size);
  for (const [tenantId, entry] of changed) {
    await writeDepts(
      tx,
      tenantId,
      entry.depts.map((p) => p.row),
    );
    const seen = (p: Planned<never>) => judged.seen.has(`user/${tenantId}/${p.sourceId}`);
    await writeUsers(
      tx,
      tenantId,
      entry.users.filter((p) => !seen(p)).map((p) => p.row),
      true,
    );
    await writeUsers(
      tx,
      tenantId,
      entry.users.filter(seen).map((p) => p.row),
      false,
    );
    await writeDigests(tx, tenantId, entry.all);
    const count = (kind: Kind, outcome: Outcome) => entry.all.filter((p) => p.kind === kind && judged.outcomes.get(p) === outcome).length;
    const tally = (kind: Kind) => ({ imported: count(kind, 'imported'), updated: count(kind, 'updated') });
    const tenant = plan.tenants.find((t) => t.row.tenant_id === tenantId);
    const changes = {
      source: 'ruoyi',
      tenant: tenant ? (judged.outcomes.get(tenant) ?? 'unchanged') : 'unchanged',
      depts: tally('dept'),
      users: tally('user'),
      ...(tenantId === PLATFORM ? { packages: tally('package') } : {}),
    };
    const entityId = judged.tenantIds.get(tenantId) ?? tenant?.row.id ?? tenantId;
    await recordAudit(tx, ACTOR, [{ action: 'tenant.import', entityType: 'tenant', entityId, tenantId, changes }]);
    progress.step();
  }
  await moveSequences(
    tx,
    largest(
      plan.depts.map((d) => d.row.dept_id),
      SAFE_MAX,
    ),
    largest(
      plan.users.map((u) => u.row.user_id),
      SAFE_MAX,
    ),
    Number(
      largest(
        plan.tenants.map((t) => t.row.tenant_id),
        999_999n,
      ),
    ),
  );
}

/**
 * Runs the import: `dryRun` stops after the checks. With a problem found
 * nothing is written (the report lists them); with nothing changed since
 * the last run nothing is written or recorded either.
 */
export async function importRuoyi(sql: Sql, url: string, options: { dryRun: boolean; progress: Progress }): Promise<ImportReport> {
  const { progress } = options;
  progress.phase('reading the source', 5);
  const source = await readSource(url, () => progress.step());
  progress.done();
  progress.phase('checking', 2);
  const plan = mapSource(source);
  checkPlan(plan);
  progress.step();
  const judged = await judgeAgainstTarget(sql, plan);
  progress.step();
  progress.done();
  const counts = countsOf(plan, judged);
  const changes = [...judged.outcomes.values()].some((outcome) => outcome !== 'unchanged');
  if (plan.problems.length > 0 || options.dryRun || !changes) return { plan, counts, changes, written: false };
  await transactionAcrossTenants(sql, (tx) => write(tx, plan, judged, progress));
  progress.done();
  return { plan, counts, changes, written: true };
}
