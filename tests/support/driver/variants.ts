import { join } from 'node:path';
import { copyWithout, readHunks, ROOT, type PatchHunk } from '../patch.hunks.js';

// The changes of patches/postgres+3.4.9.patch, read from the patch file
// itself, and copies of the installed postgres.js with chosen changes taken
// out again, for tests/driver.patch.test.ts. Every hunk of the patch names
// its change in an added comment, `Patched, <change> (<upstream reference>)`
// (a change's further hunks may name it without the reference).

export { ROOT };
export const INSTALLED = join(ROOT, 'node_modules', 'postgres');

export interface Hunk extends PatchHunk {
  change: string;
  /** The parenthesised reference after the change's name, when this hunk gives it. */
  upstream: string | undefined;
}

export async function readPatch(): Promise<Hunk[]> {
  return (await readHunks('postgres', 'postgres+3.4.9.patch')).map((hunk) => {
    const markers = [...hunk.added.matchAll(/Patched, ([a-z-]+)(?: \(([^)]*)\))?/g)];
    if (markers.length !== 1) throw new Error(`${hunk.file}: a hunk names ${markers.length} changes, not one:\n${hunk.patched}`);
    return { ...hunk, change: markers[0]![1]!, upstream: markers[0]![2] };
  });
}

/** A copy of the installed postgres.js in `dir` with the hunks `without` picks reverted to 3.4.9's text. */
export async function variant(dir: string, hunks: Hunk[], without: (hunk: Hunk) => boolean): Promise<string> {
  return copyWithout('postgres', join(dir, 'postgres'), hunks, without);
}
