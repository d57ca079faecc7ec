import { KINDS } from './ruoyi.plan.js';
import type { ImportReport } from './ruoyi.import.js';

// What the command prints at the end (docs/migrate-from-ruoyi.md#the-summary): the
// problems, each with its source table and id; or the summary table per kind
// and the fields dropped.

const TABLES = { package: 'packages', tenant: 'tenants', dept: 'departments', user: 'users' } as const;

function table(header: string[], rows: (string | number)[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells: (string | number)[]) =>
    cells.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]!) : String(cell).padStart(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}

export function problemLines(report: ImportReport): string[] {
  const { problems } = report.plan;
  return [`${problems.length} problem(s) found; nothing was written:`, ...problems.map((p) => `  ${p.table} ${p.id}: ${p.message}`)];
}

export function summaryLines(report: ImportReport, dryRun: boolean): string[] {
  const { counts, plan } = report;
  const rows = KINDS.map((kind) => [TABLES[kind], counts[kind].imported, counts[kind].updated, counts[kind].unchanged, counts[kind].skipped]);
  const verb = dryRun ? 'would import' : 'imported';
  const lines = table(['', dryRun ? 'to import' : 'imported', dryRun ? 'to update' : 'updated', 'unchanged', 'skipped'], rows);
  const dropped = Object.entries(plan.dropped).sort(([a], [b]) => a.localeCompare(b));
  lines.push('', dropped.length === 0 ? 'Fields dropped: none' : 'Fields dropped (no place in the service; values counted):');
  for (const [field, n] of dropped) lines.push(`  ${field}: ${n}`);
  if (plan.fixedAncestors.length > 0) {
    const shown = plan.fixedAncestors.slice(0, 20).join(', ');
    const more = plan.fixedAncestors.length > 20 ? ` and ${plan.fixedAncestors.length - 20} more` : '';
    lines.push(`Ancestors recomputed (the source's disagreed with the parents) for sys_dept ${shown}${more}`);
  }
  lines.push(
    '',
    !report.changes
      ? 'Nothing changed since the last import: nothing written, nothing recorded.'
      : dryRun
        ? `Dry run: nothing written; a run without --dry-run ${verb} the rows above.`
        : 'Done: written in one transaction, one tenant.import audit record per tenant that changed.',
  );
  return lines;
}
