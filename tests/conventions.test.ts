import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';
import Fastify from 'fastify';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import type { Permission } from '../src/identity/roles.js';
import '../src/auth/auth.plugin.js';
import { deptRoutes } from '../src/depts/dept.routes.js';
import { webhookPlugin } from '../src/webhooks/webhook.plugin.js';
import type { Sql } from '../src/db/database.js';

// Project conventions a type-check or a file listing can prove.

const ROOT = join(import.meta.dirname, '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
/** The rooms of src/ and the rooms each may import, as the lint holds them. */
const { ROOMS: rooms, COMPOSITION: composition } = (await import(pathToFileURL(join(ROOT, 'eslint.config.js')).href)) as {
  ROOMS: Record<string, string[]>;
  COMPOSITION: string[];
};

describe('conventions', () => {
  it('permission strings are a closed union: a misspelt route permission does not compile', () => {
    // Checked by `tsc --noEmit` (CI's type check), which fails if either line below compiles.
    const app = Fastify();
    // @ts-expect-error 'system:dept:ad' is not a Permission
    app.get('/typo', { config: { permission: 'system:dept:ad' } }, async () => null);
    // @ts-expect-error nor is an arbitrary string
    const typo: Permission = 'system:dept:delete';
    const known: Permission = 'system:dept:add';
    expect([typo, known]).toHaveLength(2);
  });

  it('.env.example and the README document every variable src/config.ts reads', () => {
    const names = [...read('src/config.ts').matchAll(/\(env, '([A-Z][A-Z0-9_]+)'/g)].map((match) => match[1]!);
    expect(names).toEqual(expect.arrayContaining(['PORT', 'DATABASE_URL', 'CORS_ORIGINS', 'TZ']));
    const example = read('.env.example');
    const readme = read('README.md');
    for (const name of new Set(names)) {
      expect(example, `${name} in .env.example`).toMatch(new RegExp(`^#? ?${name}=`, 'm'));
      expect(readme, `${name} in the README's configuration table`).toContain(`| \`${name}\` |`);
    }
  });

  it('import boundaries: an arrow back up the layers fails lint (docs/architecture.md#layers)', async () => {
    // The project's own ESLint configuration, without the type-aware rules (the probe files are not on disk).
    const eslint = new ESLint({ cwd: ROOT, overrideConfig: [{ files: ['**/*.ts'], ...tseslint.configs.disableTypeChecked }] });
    const refusals = async (file: string, code: string) => {
      const [result] = await eslint.lintText(code, { filePath: join(ROOT, file) });
      return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').length;
    };
    const uses = (spec: string) => `import * as m from '${spec}';\nexport const used = m;\n`;
    // Rules load no web framework and no web-layer module.
    expect(await refusals('src/depts/probe.sql.ts', uses('fastify'))).toBeGreaterThan(0);
    expect(await refusals('src/users/probe.rules.ts', uses('../http/envelope.plugin.js'))).toBeGreaterThan(0);
    expect(await refusals('src/tenants/probe.sql.ts', uses('./tenant.routes.js'))).toBeGreaterThan(0);
    // Among the rules: audit < auth < depts < users < tenants.
    expect(await refusals('src/depts/probe.rules.ts', uses('../tenants/tenant.sql.js'))).toBeGreaterThan(0);
    expect(await refusals('src/audit/probe.sql.ts', uses('../auth/auth.sql.js'))).toBeGreaterThan(0);
    // Foundations import no rules.
    expect(await refusals('src/identity/probe.ts', uses('../depts/dept.sql.js'))).toBeGreaterThan(0);
    expect(await refusals('src/core/probe.ts', uses('../audit/audit.record.js'))).toBeGreaterThan(0);
    // The arrows that point down pass.
    expect(await refusals('src/tenants/probe.sql.ts', uses('../depts/dept.sql.js'))).toBe(0);
    expect(await refusals('src/depts/probe.sql.ts', uses('../identity/caller.js'))).toBe(0);
    expect(await refusals('src/depts/probe.routes.ts', uses('fastify'))).toBe(0);
  }, 60_000);
  it('rooms: every folder of src/ is a room of the import graph (or composes them, as the top of src/), which has no circle, and every import between rooms is one it allows', () => {
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect([...Object.keys(rooms), ...composition].sort()).toEqual(folders.sort());
    // No circle: a walk from each room never comes back to a room on its own path.
    const walk = (room: string, path: string[]): void => {
      expect(path, `a circle: ${[...path, room].join(' -> ')}`).not.toContain(room);
      for (const next of rooms[room]!) walk(next, [...path, room]);
    };
    for (const room of Object.keys(rooms)) walk(room, []);
    // The imports as written, folder to folder (what the lint holds file by file).
    const arrows = new Set<string>();
    const files = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
    for (const file of files) {
      const from = file.split('/')[0]!;
      if (!(from in rooms)) continue;
      for (const [, spec] of read(join('src', file)).matchAll(/(?:\bfrom|\bimport\s*\(?)\s*'(\.[^']+)'/g)) {
        const to = relative(join(ROOT, 'src'), resolve(dirname(join(ROOT, 'src', file)), spec!)).split('/')[0]!;
        if (to !== from) arrows.add(`${from} -> ${to}`);
      }
    }
    const refused = [...arrows].filter((arrow) => {
      const [from, to] = arrow.split(' -> ') as [string, string];
      return !rooms[from]!.includes(to);
    });
    expect(refused).toEqual([]);
    expect(arrows.size).toBeGreaterThan(30);
  });

  it('rooms: for each room an import of a room it does not list, and of the top of src/, fails lint; one it lists passes', async () => {
    const eslint = new ESLint({ cwd: ROOT, overrideConfig: [{ files: ['**/*.ts'], ...tseslint.configs.disableTypeChecked }] });
    const refusals = async (file: string, spec: string) => {
      const [result] = await eslint.lintText(`import * as m from '${spec}';\nexport const used = m;\n`, { filePath: join(ROOT, file) });
      return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').length;
    };
    const all = Object.keys(rooms);
    for (const [room, may] of Object.entries(rooms)) {
      // A probe in the room's routes file (web) and in a rules file: both are held to the room's list.
      for (const probe of [`src/${room}/probe.routes.ts`, `src/${room}/probe.sql.ts`]) {
        const above = all.find((other) => other !== room && !may.includes(other))!;
        expect(await refusals(probe, `../${above}/x.js`), `${probe} importing ${above}`).toBeGreaterThan(0);
        expect(await refusals(probe, '../config.js'), `${probe} importing the top of src/`).toBeGreaterThan(0);
        if (may.length)
          expect(await refusals(probe.replace('.sql.', '.routes.'), `../${may.at(-1)}/x.js`), `${probe} importing ${may.at(-1)}`).toBe(0);
      }
    }
  }, 120_000);

  it('wiring: a plugin registered before what it declares it needs is refused by Fastify', async () => {
    const sql = {} as Sql; // never reached: the dependency check comes first
    const routes = Fastify();
    await expect(routes.register(deptRoutes, { chartCacheBytes: 0 })).rejects.toThrow(/@fastify\/swagger/);
    const webhooks = Fastify();
    await expect(webhooks.register(webhookPlugin, { sql })).rejects.toThrow(/audit/);
  });
});
