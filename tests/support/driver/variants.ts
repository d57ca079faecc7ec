import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// The changes of patches/postgres+3.4.9.patch, read from the patch file
// itself, and copies of the installed postgres.js with chosen changes taken
// out again, for tests/driver.patch.test.ts. Every hunk of the patch names
// its change in an added comment, `Patched, <change> (<upstream reference>)`
// (a change's further hunks may name it without the reference).

export const ROOT = join(import.meta.dirname, '..', '..', '..');
const PATCH_FILE = join(ROOT, 'patches', 'postgres+3.4.9.patch');
export const INSTALLED = join(ROOT, 'node_modules', 'postgres');

export interface Hunk {
  /** The file inside the package, e.g. src/connection.js. */
  file: string;
  change: string;
  /** The parenthesised reference after the change's name, when this hunk gives it. */
  upstream: string | undefined;
  /** The hunk's lines as the patch leaves them, and as postgres.js 3.4.9 has them. */
  patched: string;
  original: string;
}

export async function readPatch(): Promise<Hunk[]> {
  const text = await readFile(PATCH_FILE, 'utf8');
  const hunks: Hunk[] = [];
  for (const section of text.split(/^diff --git /m).slice(1)) {
    const file = /^a\/node_modules\/postgres\/(\S+)/.exec(section)![1]!;
    for (const body of section.split(/^@@[^\n]*\n/m).slice(1)) {
      const lines = body.split('\n').filter((line) => /^[ +-]/.test(line) && !/^(\+\+\+|---) /.test(line));
      const added = lines.filter((line) => line.startsWith('+')).join('\n');
      const markers = [...added.matchAll(/Patched, ([a-z-]+)(?: \(([^)]*)\))?/g)];
      if (markers.length !== 1) throw new Error(`${file}: a hunk names ${markers.length} changes, not one:\n${body}`);
      hunks.push({
        file,
        change: markers[0]![1]!,
        upstream: markers[0]![2],
        patched: lines
          .filter((line) => !line.startsWith('-'))
          .map((line) => line.slice(1))
          .join('\n'),
        original: lines
          .filter((line) => !line.startsWith('+'))
          .map((line) => line.slice(1))
          .join('\n'),
      });
    }
  }
  return hunks;
}

/** A copy of the installed postgres.js in `dir` with the hunks `without` picks reverted to 3.4.9's text. */
export async function variant(dir: string, hunks: Hunk[], without: (hunk: Hunk) => boolean): Promise<string> {
  const target = join(dir, 'postgres');
  await cp(INSTALLED, target, { recursive: true });
  for (const hunk of hunks.filter(without)) {
    const path = join(target, hunk.file);
    const text = await readFile(path, 'utf8');
    const at = text.indexOf(hunk.patched);
    if (at < 0 || text.indexOf(hunk.patched, at + 1) >= 0)
      throw new Error(`${hunk.file}: the ${hunk.change} hunk is not in the installed package exactly once`);
    await writeFile(path, text.slice(0, at) + hunk.original + text.slice(at + hunk.patched.length));
  }
  return target;
}
