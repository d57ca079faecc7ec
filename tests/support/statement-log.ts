import { appendFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inject } from 'vitest';
import type { PostgresOptions } from '../../src/db/database.js';

// The statements the app sends during the suite, for the tenant-filter check
// of the global teardown (tests/support/tenant-statements.ts,
// docs/scale-out.md#the-check). Only the pools the app under test uses are
// recorded; the tests' own setup and assertion queries go through an
// unrecorded pool, as they are no part of the service.
//
// Vitest runs the files in several worker processes, so each worker appends
// each statement text it has not yet seen to a file of its own in the run's
// directory, at once and synchronously: a worker may be stopped without any
// exit hook running, and a statement recorded late would be one judged never.

const seen = new Set<string>();

function record(dir: string, text: string): void {
  if (seen.has(text)) return;
  seen.add(text);
  appendFileSync(join(dir, `${process.pid}.jsonl`), `${JSON.stringify(text)}\n`);
}

/**
 * Options for `openPostgres` that record every statement of the pool, when
 * the run records (PostgreSQL); none on PGlite, where the check does not run.
 */
export function recordedPool(): Pick<PostgresOptions, 'onStatement'> {
  const dir = inject('statementLogDir');
  return dir ? { onStatement: (text) => record(dir, text) } : {};
}

/** The same, for a process that is not a test worker (the global setup): records into `dir`. */
export function recordedPoolIn(dir: string): Pick<PostgresOptions, 'onStatement'> {
  return { onStatement: (text) => record(dir, text) };
}

/** Every distinct statement text any process recorded into `dir`. */
export async function recordedStatements(dir: string): Promise<string[]> {
  const texts = new Set<string>();
  for (const file of await readdir(dir)) {
    if (!file.endsWith('.jsonl')) continue;
    for (const line of (await readFile(join(dir, file), 'utf8')).split('\n')) {
      if (line) texts.add(JSON.parse(line) as string);
    }
  }
  return [...texts].sort();
}
