// Writes the OpenAPI document the service serves at /openapi.json to a file,
// built on a throwaway in-memory embedded database, and refuses (exit 1)
// when an operation lacks what clients and `redocly lint` rely on:
// operationId, summary, tags, and a description for every response.
//
//   npx tsx scripts/openapi.ts [out.json]     (default: openapi.json)
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { buildApp } from '../src/app.js';
import { openEmbedded } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { DEFAULT_TOKEN_TTL } from '../src/core/limits.js';

const out = process.argv[2] ?? 'openapi.json';
const db = await openEmbedded(undefined);
try {
  await migrate(db.sql);
  const app = await buildApp({ sql: db.sql, config: { jwtSecret: 'x'.repeat(32), tokenTtl: DEFAULT_TOKEN_TTL, logLevel: 'silent' }, logger: false });
  await app.ready();
  const document = app.swagger() as { paths?: Record<string, Record<string, Operation>> };
  await app.close();
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);

  const problems: string[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      const where = `${method.toUpperCase()} ${path}`;
      if (!op.operationId) problems.push(`${where}: no operationId`);
      if (!op.summary) problems.push(`${where}: no summary`);
      if (!op.tags?.length) problems.push(`${where}: no tags`);
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (!response.description || response.description === 'Default Response') {
          problems.push(`${where}: response ${status} has no description (declare it with responses() from src/http/envelope.schema.ts)`);
        }
      }
    }
  }
  if (problems.length > 0) {
    console.error(`OpenAPI: ${problems.length} problem(s) in ${out}. Every route's schema needs operationId, summary, tags and responses(...):`);
    for (const p of problems) console.error(`  - ${p}`);
    process.exitCode = 1;
  } else {
    console.log(
      `OpenAPI document written to ${out}: ${Object.keys(document.paths ?? {}).length} paths, every operation named, summarised and tagged`,
    );
  }
} finally {
  await db.close();
}

interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  responses?: Record<string, { description?: string }>;
}
