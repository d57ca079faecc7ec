// ESLint flat config: the recommended rules of ESLint and typescript-eslint,
// plus a few type-aware rules about promises (a floating or misused promise is
// a bug the compiler does not report). They read the types through the
// TypeScript project service, which type-checks the files it lints; the rest
// of the type-aware presets (no-unsafe-*, ...) are not enabled. Formatting is
// Prettier's job, not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Import boundaries (docs/architecture.md#layers), held at two levels.
//
// Rooms: each folder of src/ names the rooms it may import; together they
// form this graph, which has no circle (tests/conventions.test.ts checks it
// lists every folder and stays acyclic), so no arrow runs back up. The files
// at the top of src/ (app.ts, main.ts, config.ts, ...) compose the rooms:
// any room may be imported there, and no room imports them.
export const ROOMS = {
  core: [],
  db: ['core'],
  identity: ['core', 'db'],
  http: ['core', 'db'],
  traces: ['core', 'db'],
  metrics: ['core', 'db'],
  outbound: ['core'],
  audit: ['core', 'db', 'identity', 'http', 'metrics'],
  apikeys: ['core', 'db', 'identity', 'http', 'audit'],
  auth: ['core', 'db', 'identity', 'http', 'audit', 'apikeys'],
  depts: ['core', 'db', 'identity', 'http', 'audit'],
  users: ['core', 'db', 'identity', 'http', 'audit', 'auth', 'depts'],
  tenants: ['core', 'db', 'identity', 'http', 'audit', 'auth', 'depts', 'users', 'packages'],
  webhooks: ['core', 'db', 'identity', 'http', 'audit', 'metrics', 'outbound'],
  scim: ['core', 'db', 'identity', 'http', 'depts', 'users'],
  sso: ['core', 'db', 'identity', 'http', 'outbound', 'audit', 'auth', 'users'],
  packages: ['core', 'db', 'identity', 'http', 'audit'],
  quotas: ['core', 'db', 'identity', 'http', 'audit', 'tenants'],
  ruoyi: ['core', 'db', 'identity', 'audit', 'depts', 'users', 'tenants', 'packages'],
};

// Folders of src/ that compose the rooms, as the files at the top of src/ do: they may import any room
// and the top of src/, and no room imports them. src/cli/: the `dept-tenant` commands.
export const COMPOSITION = ['cli'];

// Layers inside a room: Fastify lives in the web files alone (routes,
// plugins, replies, the SSE stream, src/http/, the metrics and traces rooms, the
// composition). Every other file of src/ is a rule or a foundation: plain
// functions (sql, input) that load no web framework and no web file.
const WEB_FILES = [
  'src/http/**',
  'src/metrics/**',
  'src/traces/**',
  'src/**/*.routes.ts',
  'src/**/*.plugin.ts',
  'src/**/*.reply.ts',
  'src/audit/audit.stream.ts',
  'src/app.ts',
  'src/main.ts',
];
const NO_WEB = [
  {
    group: ['fastify', 'fastify-plugin', '@fastify/*'],
    message: 'Rules and foundations load no web framework: take a Caller (src/identity/caller.ts), not a request.',
  },
  {
    group: ['**/http/*', '**/*.routes.js', '**/*.plugin.js', '**/audit.stream.js', '**/app.js', '**/main.js'],
    message: 'The web layer imports rules, never the other way round.',
  },
];

/** The import patterns a file of `room` may not use: the rooms it does not list, and the top of src/. */
function roomRefusals(room) {
  const may = ROOMS[room];
  const others = [...Object.keys(ROOMS).filter((other) => other !== room && !may.includes(other)), ...COMPOSITION];
  const message = `${room} imports ${may.length ? `only ${may.join(', ')}` : 'no other room'} (eslint.config.js ROOMS, docs/architecture.md#layers).`;
  return [
    ...(others.length ? [{ group: others.map((other) => `**/${other}/*`), message }] : []),
    { group: ['../*.js'], message: 'The top of src/ composes the rooms; a room takes what it needs from there as an option, never as an import.' },
  ];
}
const refuse = (files, patterns, ignores = []) => ({ files, ignores, rules: { 'no-restricted-imports': ['error', { patterns }] } });
const importBoundaries = [
  // Later entries win for a file they match: every file first gets its room's refusals, then a room's
  // rule files get the web refusals added.
  ...Object.keys(ROOMS).map((room) => refuse([`src/${room}/**/*.ts`], roomRefusals(room))),
  refuse(['src/*.ts', ...COMPOSITION.map((folder) => `src/${folder}/**/*.ts`)], NO_WEB, WEB_FILES.concat('src/health.routes.ts')),
  ...Object.keys(ROOMS).map((room) => refuse([`src/${room}/**/*.ts`], [...NO_WEB, ...roomRefusals(room)], WEB_FILES)),
];

export default tseslint.config(
  // Generated from the OpenAPI document (scripts/client.ts), checked against it rather than linted.
  { ignores: ['node_modules/', 'dist/', 'data/', '.openapi/', 'coverage/', 'packages/*/dist/', 'packages/client/src/generated/'] },
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
