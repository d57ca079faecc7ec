import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import Fastify from 'fastify';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import type { Permission } from '../src/identity/roles.js';
import '../src/auth/auth.plugin.js';

// Project conventions a type-check or a file listing can prove.

const ROOT = join(import.meta.dirname, '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

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
});
