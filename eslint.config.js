// ESLint flat config: the recommended rules of ESLint and typescript-eslint,
// plus a few type-aware rules about promises (a floating or misused promise is
// a bug the compiler does not report). They read the types through the
// TypeScript project service, which type-checks the files it lints; the rest
// of the type-aware presets (no-unsafe-*, ...) are not enabled. Formatting is
// Prettier's job, not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Import boundaries: every arrow points down this list, never back up
// (docs/architecture.md#layers).
//   1. composition   src/app.ts, src/main.ts
//   2. web           src/http/, *.routes.ts, *.plugin.ts, audit.stream.ts: Fastify lives here
//   3. rules         *.sql.ts, *.service.ts, *.schema.ts, ... : plain functions (sql, input), no Fastify;
//                    among them audit < auth < depts < users < tenants; webhooks sit on audit alone
//   4. foundations   src/identity/ (who acts), src/db/ (connections, locks), src/core/ (errors, ids, time, limits)
const WEB = [
  {
    group: ['fastify', 'fastify-plugin', '@fastify/*'],
    message: 'Rules and foundations load no web framework: take a Caller (src/identity/caller.ts), not a request.',
  },
  {
    group: ['**/http/*', '**/*.routes.js', '**/*.plugin.js', '**/audit.stream.js', '**/app.js', '**/main.js'],
    message: 'The web layer imports rules, never the other way round.',
  },
];
const domain = (...names) => names.map((name) => `**/${name}/*`);
const RULES = [
  'src/**/*.sql.ts',
  'src/**/*.service.ts',
  'src/**/*.schema.ts',
  'src/**/*.fields.ts',
  'src/**/*.rules.ts',
  'src/**/*.locks.ts',
  'src/**/*.record.ts',
  'src/**/*.chart.ts',
  'src/**/*.chart.*.ts',
  'src/**/*.depth.ts',
  'src/audit/audit.feed.ts',
  'src/auth/password.ts',
  'src/auth/session.cache.ts',
  'src/webhooks/webhook.{address,delivery,options,send,sign}.ts',
  'src/bootstrap.ts',
  'src/config.ts',
  'src/reset-password.ts',
];
const below = (files, names, message) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: [...WEB, ...(names.length ? [{ group: domain(...names), message }] : [])] }] },
});
const importBoundaries = [
  below(RULES, []),
  below(
    ['src/audit/*.{sql,record,schema}.ts', 'src/audit/audit.feed.ts'],
    ['auth', 'depts', 'users', 'tenants'],
    'audit rules come first: nothing of auth, depts, users or tenants.',
  ),
  below(
    ['src/auth/*.{sql,service,schema}.ts', 'src/auth/password.ts', 'src/auth/session.cache.ts'],
    ['depts', 'users', 'tenants'],
    'auth rules sit below depts, users and tenants.',
  ),
  below(
    ['src/depts/*.{sql,schema,chart,depth,rules,locks,fields}.ts', 'src/depts/*.chart.*.ts'],
    ['auth', 'users', 'tenants'],
    'department rules sit below users and tenants.',
  ),
  below(['src/users/*.{sql,schema,rules,fields}.ts'], ['tenants'], 'user rules sit below tenants.'),
  below(
    ['src/webhooks/*.{sql,fields,schema,rules,address,delivery,options,send,sign}.ts'],
    ['auth', 'depts', 'users', 'tenants'],
    'webhooks read the audit feed only: nothing of auth, depts, users or tenants.',
  ),
  below(['src/core/**', 'src/identity/**', 'src/db/**'], ['audit', 'auth', 'depts', 'users', 'tenants', 'webhooks'], 'Foundations import no rules.'),
  {
    // The audit room's web files (routes, plugin, stream) may use Fastify, but still not auth or the
    // resources: what they need of auth (is a follower's session still live?) is handed in by app.ts.
    files: ['src/audit/audit.{routes,plugin,stream}.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [{ group: domain('auth', 'depts', 'users', 'tenants'), message: 'audit comes first: nothing of auth, depts, users or tenants.' }],
        },
      ],
    },
  },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', '.openapi/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { process: 'readonly', console: 'readonly' },
      parserOptions: {
        // Each file is typed by the tsconfig.json nearest to it (tests/client has its own).
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Unused arguments are kept when a callback's signature needs them; prefix them with _.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // A promise nobody awaits loses its rejection; one deliberately left running is marked with `void`.
      '@typescript-eslint/no-floating-promises': 'error',
      // A promise where a boolean or a void callback is expected (an `if`, an event listener) is never awaited.
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // A promise returned from inside try/catch/finally escapes them unless it is awaited there.
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      // Not require-await: Fastify takes plugins, hooks and handlers as async functions (or a
      // done callback), so most of the async functions without an await here are that contract.
    },
  },
  ...importBoundaries,
  {
    // Tests read JSON answers of many shapes; `any` there is deliberate.
    files: ['tests/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Plain JavaScript configuration files belong to no tsconfig: no type information for them.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
);
