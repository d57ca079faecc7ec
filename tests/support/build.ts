import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');
/** The built service the operation tests spawn (tests/support/service.ts). */
export const DIST = join(ROOT, 'dist');

/**
 * Compiles src/ to dist/ (`tsc -p tsconfig.build.json`, the same as
 * `npm run build`), once per test run, so the spawned services start from
 * plain JavaScript instead of compiling TypeScript at every start. It runs
 * every time and the entry points must have been written by this very build,
 * so a stale dist/ is never what the tests run. Type errors do not stop the
 * suite (vitest does not type-check either); they are printed, and the
 * JavaScript tsc still emits is used.
 */
export async function buildDist(): Promise<void> {
  const started = Date.now();
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const child = spawn(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (c) => resolve(c));
  });
  // tsc: 0 clean, 2 type errors but JavaScript emitted, anything else nothing (usable) emitted.
  if (code !== 0 && code !== 2) throw new Error(`tsc -p tsconfig.build.json failed (exit ${code}):\n${output}`);
  if (code === 2) console.warn(`[tests] tsc -p tsconfig.build.json reported type errors; testing the JavaScript it emitted:\n${output}`);
  for (const entry of ['main.js', 'cli/cli.main.js']) {
    const file = join(DIST, entry);
    const { mtimeMs } = await stat(file);
    // Allow for the file system's timestamp granularity; anything older was not written by this build.
    if (mtimeMs < started - 1000) throw new Error(`${file} was not rewritten by the build; refusing to test a stale dist/`);
  }
}
