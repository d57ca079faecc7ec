import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

// The hunks of a patch under patches/ (patch-package's format), and copies of
// the installed package with chosen hunks taken out again: how the tests of
// a patched dependency compare it with the release it patches.

export const ROOT = join(import.meta.dirname, '..', '..');

export interface PatchHunk {
  /** The file inside the package, e.g. src/connection.js. */
  file: string;
  /** The hunk's lines as the patch leaves them, and as the release has them. */
  patched: string;
  original: string;
  /** Its added lines only. */
  added: string;
}

/** The hunks of `patches/<patchFile>`, which patches the package installed at node_modules/<name>. */
export async function readHunks(name: string, patchFile: string): Promise<PatchHunk[]> {
  const text = await readFile(join(ROOT, 'patches', patchFile), 'utf8');
  const prefix = `a/node_modules/${name}/`;
  const hunks: PatchHunk[] = [];
  for (const section of text.split(/^diff --git /m).slice(1)) {
    if (!section.startsWith(prefix)) throw new Error(`${patchFile}: a section for another package: ${section.slice(0, 80)}`);
    const file = /^(\S+)/.exec(section.slice(prefix.length))![1]!;
    for (const body of section.split(/^@@[^\n]*\n/m).slice(1)) {
      const lines = body.split('\n').filter((line) => /^[ +-]/.test(line) && !/^(\+\+\+|---) /.test(line));
      const keep = (drop: string) =>
        lines
          .filter((line) => !line.startsWith(drop))
          .map((line) => line.slice(1))
          .join('\n');
      hunks.push({ file, patched: keep('-'), original: keep('+'), added: lines.filter((line) => line.startsWith('+')).join('\n') });
    }
  }
  return hunks;
}

/** A copy of node_modules/<name> at `target`, with the hunks `without` picks reverted to the release's text. */
export async function copyWithout<H extends PatchHunk>(name: string, target: string, hunks: H[], without: (hunk: H) => boolean): Promise<string> {
  await cp(join(ROOT, 'node_modules', name), target, { recursive: true });
  for (const hunk of hunks.filter(without)) {
    const path = join(target, hunk.file);
    const text = await readFile(path, 'utf8');
    const at = text.indexOf(hunk.patched);
    if (at < 0 || text.indexOf(hunk.patched, at + 1) >= 0)
      throw new Error(`${name}/${hunk.file}: a hunk is not in the installed package exactly once`);
    await writeFile(path, text.slice(0, at) + hunk.original + text.slice(at + hunk.patched.length));
  }
  return target;
}
