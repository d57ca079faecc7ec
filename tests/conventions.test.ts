import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
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
});
