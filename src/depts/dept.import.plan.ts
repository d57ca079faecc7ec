import { Type } from '@sinclair/typebox';
import { valueChecker } from '../core/value.check.js';
import { propertiesOf } from '../db/fields.js';
import { DEPT_FIELDS } from './dept.fields.js';
import { idFromText, type Id } from '../core/ids.js';
import { INT8_MAX } from '../core/limits.js';
import type { FileRow } from './dept.file.js';

// What an imported chart file changes (docs/api-rules.md#a-chart-as-a-file):
// the file's rows laid over the tenant's live departments, then every rule a
// department write keeps checked on the result at once, each problem named
// by its line. Plain data in, plain data out: dept.import.sql.ts reads and
// writes.

export interface ChartRow {
  deptId: Id;
  parentId: Id;
  deptName: string;
  orderNum: number;
  leader: string | null;
  phone: string | null;
  email: string | null;
  status: string;
  ancestors: string;
}

export interface ChartPlan {
  creates: ChartRow[];
  updates: ChartRow[];
  unchanged: number;
  problems: string[];
}

const MAX_DEPTH = 50;
const properties = propertiesOf(DEPT_FIELDS);
const checkValues = valueChecker(
  Type.Object({
    deptName: properties.deptName,
    orderNum: properties.orderNum,
    leader: properties.leader,
    phone: properties.phone,
    email: properties.email,
    status: properties.status,
  }),
);
const ID = /^[0-9]{1,19}$/;
/** A file's id as the one form (core/ids.ts); undefined when no department can have it. */
const idIn = (raw: string): Id | undefined => (ID.test(raw) && BigInt(raw) <= INT8_MAX ? idFromText(raw) : undefined);
const FIELDS = ['parentId', 'deptName', 'orderNum', 'leader', 'phone', 'email', 'status', 'ancestors'] as const;

/** Whether following the parents up from `d` comes back to it. */
function inCycle(merged: Map<Id, ChartRow>, d: ChartRow): boolean {
  const seen = new Set<Id>();
  for (let at = merged.get(d.parentId); at && !seen.has(at.deptId); at = merged.get(at.parentId)) {
    if (at.deptId === d.deptId) return true;
    seen.add(at.deptId);
  }
  return false;
}

interface Parsed {
  row: ChartRow;
  line: number;
  parentRef: string | null;
}

/** One file row as a department, or its problems. `id` is the department's (its deptId, or a new one). */
function parseRow(file: FileRow, id: Id, problems: string[]): Parsed {
  const c = file.cells;
  const at = (message: string) => problems.push(`line ${file.line}: ${message}`);
  const optional = (value: string | undefined) => (value === undefined || value === '' ? null : value);
  const parentRef = optional(c.parentRef);
  if (parentRef !== null && optional(c.parentId) !== null) at('give parentId or parentRef, not both');
  const parentId = idIn(c.parentId ?? '');
  if (parentRef === null && parentId === undefined) at(`parentId "${c.parentId ?? ''}" must be a department id, 0 for a top-level department`);
  const orderNum = c.orderNum === undefined || c.orderNum === '' ? 0 : /^[0-9]{1,10}$/.test(c.orderNum) ? Number(c.orderNum) : Number.NaN;
  const row: ChartRow = {
    deptId: id,
    parentId: parentRef === null ? (parentId ?? -1) : -1,
    deptName: c.deptName ?? '',
    orderNum,
    leader: optional(c.leader),
    phone: optional(c.phone),
    email: optional(c.email),
    status: optional(c.status) ?? '0',
    ancestors: '',
  };
  if (Number.isNaN(orderNum)) at(`orderNum "${c.orderNum}" must be a whole number`);
  else {
    const refused = checkValues({ ...row });
    if (refused !== undefined) at(refused);
  }
  return { row, line: file.line, parentRef };
}

/**
 * Rule: the chart after the import is one a series of department writes
 * could have made: parents live, no cycle, at most 50 levels, live sibling
 * names unique, no enabled department under a disabled one. Paths
 * (`ancestors`) are recomputed for every department the import moves.
 */
export function planChartImport(current: ChartRow[], file: FileRow[], newIds: Id[]): ChartPlan {
  const problems: string[] = [];
  const live = new Map(current.map((d) => [d.deptId, d]));
  const parsed: Parsed[] = [];
  const lineOf = new Map<Id, number>();
  const refs = new Map<string, Id>();
  let next = 0;
  for (const f of file) {
    const raw = f.cells.deptId ?? '';
    let id: Id;
    const named = idIn(raw);
    if (raw === '') id = newIds[next++]!;
    else if (named === undefined || !live.has(named)) {
      problems.push(`line ${f.line}: deptId ${raw} names no live department of this tenant`);
      continue;
    } else id = named;
    if (lineOf.has(id)) {
      problems.push(`line ${f.line}: deptId ${raw} is already on line ${lineOf.get(id)}`);
      continue;
    }
    lineOf.set(id, f.line);
    const ref = f.cells.ref ?? '';
    if (ref !== '') {
      if (refs.has(ref)) problems.push(`line ${f.line}: ref "${ref}" is already on line ${lineOf.get(refs.get(ref)!)}`);
      refs.set(ref, id);
    }
    parsed.push(parseRow(f, id, problems));
  }
  const merged = new Map(current.map((d) => [d.deptId, { ...d }]));
  for (const p of parsed) {
    if (p.parentRef !== null) {
      const parent = refs.get(p.parentRef);
      if (parent === undefined) problems.push(`line ${p.line}: parentRef "${p.parentRef}" names no ref of this file`);
      else p.row.parentId = parent;
    }
    merged.set(p.row.deptId, p.row);
  }
  const at = (id: Id, message: string) => problems.push(`line ${lineOf.get(id) ?? '?'}: ${message}`);
  // Paths from the top, each department once; a cycle or a missing parent stops its walk.
  const path = new Map<Id, string | null>();
  const walk = (d: ChartRow, seen: Set<Id>): string | null => {
    if (path.has(d.deptId)) return path.get(d.deptId)!;
    if (seen.has(d.deptId)) return null;
    seen.add(d.deptId);
    const parent = d.parentId === 0 ? undefined : merged.get(d.parentId);
    const above = d.parentId === 0 ? '' : parent ? walk(parent, seen) : null;
    const own = above === null ? null : d.parentId === 0 ? '0' : `${above},${d.parentId}`;
    path.set(d.deptId, own);
    return own;
  };
  for (const p of parsed) {
    const d = p.row;
    if ((typeof d.parentId === 'string' || d.parentId > 0) && !merged.has(d.parentId) && p.parentRef === null)
      at(d.deptId, `parentId ${d.parentId} names no live department of this tenant`);
  }
  const siblings = new Map<string, Id>();
  for (const d of merged.values()) {
    const own = walk(d, new Set());
    if (own === null) {
      if (lineOf.has(d.deptId) && inCycle(merged, d)) at(d.deptId, `department ${d.deptId} would be its own ancestor`);
      continue;
    }
    if (own.split(',').length > MAX_DEPTH && lineOf.has(d.deptId)) at(d.deptId, `departments may be at most ${MAX_DEPTH} levels deep`);
    d.ancestors = own;
    const key = `${d.parentId}/${d.deptName.trim()}`;
    const other = siblings.get(key);
    if (other !== undefined && (lineOf.has(d.deptId) || lineOf.has(other)))
      at(lineOf.has(d.deptId) ? d.deptId : other, `"${d.deptName}" is already the name of a department under ${d.parentId}`);
    siblings.set(key, d.deptId);
    const parent = merged.get(d.parentId);
    if (parent && parent.status === '1' && d.status === '0' && (lineOf.has(d.deptId) || lineOf.has(parent.deptId)))
      at(lineOf.has(d.deptId) ? d.deptId : parent.deptId, `department ${d.deptId} would be enabled under the disabled ${parent.deptId}`);
  }
  const creates: ChartRow[] = [];
  const updates: ChartRow[] = [];
  for (const d of merged.values()) {
    const before = live.get(d.deptId);
    if (!before) creates.push(d);
    else if (FIELDS.some((f) => d[f] !== before[f])) updates.push(d);
  }
  const unchanged = parsed.length - creates.length - updates.filter((d) => lineOf.has(d.deptId)).length;
  return { creates, updates, unchanged, problems };
}
