// ESLint flat config: the recommended rules of ESLint and typescript-eslint,
// plus a few type-aware rules about promises (a floating or misused promise is
// a bug the compiler does not report). They read the types through the
// TypeScript project service, which type-checks the files it lints; the rest
// of the type-aware presets (no-unsafe-*, ...) are not enabled. Formatting is
// Prettier's job, not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
