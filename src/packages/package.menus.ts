import { assert } from '../core/app.error.js';

// Menu lists (docs/api-rules.md#packages): a package's menuIds and a
// tenant's packageBo.menuIds take the same form and rules.

const MAX_MENU_IDS = 10_000;

/**
 * Rule: a menu list, "1, 2,3, 2" -> "1,2,3": positive integers, duplicates
 * dropped, first occurrence order kept, at most 10,000. Anything else is a
 * 400 naming the field (`name`) and the bad entry.
 */
export function normaliseMenuIds(raw: string, name: string): string {
  if (raw.trim() === '') return '';
  const ids = raw.split(',').map((part) => part.trim());
  assert(ids.length <= MAX_MENU_IDS, 400, `${name} may list at most ${MAX_MENU_IDS} ids`);
  for (const id of ids) {
    assert(/^[1-9][0-9]{0,18}$/.test(id), 400, `${name} must be positive integers separated by commas; "${id}" is not`);
  }
  return [...new Set(ids)].join(',');
}

/** The same menus, in whatever order: what a tenant on a package may send beside its packageId. */
export function sameMenus(a: string, b: string): boolean {
  const left = new Set(a === '' ? [] : a.split(','));
  const right = b === '' ? [] : b.split(',');
  return left.size === new Set(right).size && right.every((id) => left.has(id));
}
