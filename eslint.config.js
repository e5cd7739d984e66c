// ESLint flat config. `@eslint/js` is ESLint's own recommended rule set (a dependency of `eslint`).
//
// Three machine-checked rules carry the architecture:
//   1. no `any` anywhere (`@typescript-eslint/no-explicit-any`);
//   2. no runtime import cycles (`import-x/no-cycle`; type-only imports are exempt);
//   3. `src/protocol` and `src/core` stay runtime-free: no `node:*`, no bare Node builtins, no
//      `cloudflare:*`, no `hono`, no Node-only packages, and no imports from the layers above them.
// The rules are syntactic (no type information), so `npm run lint` stays fast; the TypeScript
// programs in `npm run typecheck` do the type-aware work.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** Escapes a string for use inside a RegExp source. */
const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Bare Node builtin names (`fs`, `path`, `crypto`, ...), with or without a subpath. */
const bareNodeBuiltins = [...new Set(builtinModules.map((name) => name.split('/')[0]))]
  .filter((name) => name !== undefined && !name.startsWith('_'))
  .map(escapeRegExp)
  .sort();

/** Node's own globals, for plain-JavaScript scripts that TypeScript does not check. */
const nodeGlobals = Object.fromEntries(
  Object.getOwnPropertyNames(globalThis).map((name) => [name, 'readonly']),
);

const RUNTIME_FREE_MESSAGE =
  'src/protocol and src/core must run on any runtime: move runtime-bound code to src/adapters or src/app.';

/** Import patterns forbidden in the runtime-free layers. */
const runtimeFreeImportPatterns = [
  { regex: '^node:', message: RUNTIME_FREE_MESSAGE },
  { regex: '^cloudflare:', message: RUNTIME_FREE_MESSAGE },
  { regex: '^hono(?:/|$)', message: RUNTIME_FREE_MESSAGE },
  { regex: `^(?:${bareNodeBuiltins.join('|')})(?:/|$)`, message: RUNTIME_FREE_MESSAGE },
  {
    regex: '^(?:better-sqlite3|fs-native-extensions|ws|eventsource|wrangler|miniflare)(?:/|$)',
    message: RUNTIME_FREE_MESSAGE,
  },
];

export default defineConfig(
  {
    ignores: ['node_modules/**', '**/.wrangler/**', 'dist/**', 'coverage/**', '.tmp/**', 'test/fixtures/lint/**'],
  },
  {
    files: ['**/*.{ts,tsx,mts,js,mjs}'],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    plugins: { 'import-x': importX },
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
    },
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
    settings: {
      'import-x/extensions': ['.ts', '.tsx', '.mts', '.js', '.mjs'],
      'import-x/external-module-folders': ['node_modules', 'node_modules/@types'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx', '.mts'] },
      'import-x/resolver-next': [
        createNodeResolver({
          // Relative imports carry `.js` suffixes (NodeNext); the files on disk are `.ts`.
          extensionAlias: { '.js': ['.ts', '.tsx', '.js'], '.mjs': ['.mts', '.mjs'] },
          extensions: ['.ts', '.tsx', '.mts', '.js', '.mjs', '.json'],
          conditionNames: ['types', 'import', 'node', 'default'],
        }),
      ],
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { prefer: 'type-imports', fixStyle: 'inline-type-imports', disallowTypeAnnotations: false },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
      'import-x/no-self-import': 'error',
      'import-x/no-duplicates': 'error',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-var': 'error',
      'prefer-const': 'error',
      'no-debugger': 'error',
      'no-console': 'off',
    },
  },
  {
    files: ['**/*.{js,mjs}'],
    languageOptions: { globals: nodeGlobals },
  },
  {
    // Cycles: nothing in src/ or worker/ imports a test, bench or script, so a cycle can only run
    // through these folders; checking only them (and skipping external packages) keeps the
    // rule, the costliest one, to its useful part. test/fixtures/lint holds the rule's own probe
    // (ignored by a plain `eslint .`).
    files: ['src/**/*.{ts,tsx}', 'worker/**/*.ts', 'test/fixtures/lint/**/*.ts'],
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    // src/session runs inside Durable Objects too, so it obeys the same runtime-free rule.
    files: ['src/protocol/**/*.ts', 'src/core/**/*.ts', 'src/session/**/*.ts', 'src/session.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: runtimeFreeImportPatterns }],
    },
  },
  {
    // Imports point downwards only: protocol <- core <- session/inspector/conformance <- adapters
    // <- edge <- app <- entries, worker. Each zone names the folders a floor may not import.
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            {
              target: './src/protocol',
              from: ['./src/core', './src/session', './src/inspector', './src/conformance', './src/adapters', './src/edge', './src/app', './src/cli', './src/chat', './src/agent-client', './worker'],
              message: 'src/protocol is the bottom layer and imports nothing above it.',
            },
            {
              target: './src/core',
              from: ['./src/session', './src/inspector', './src/conformance', './src/adapters', './src/edge', './src/app', './src/cli', './src/chat', './src/agent-client', './worker'],
              message: 'src/core may import src/protocol only.',
            },
            {
              target: ['./src/session', './src/inspector', './src/conformance'],
              from: ['./src/adapters', './src/edge', './src/app', './src/cli', './src/chat', './src/agent-client', './worker'],
              message: 'src/session, src/inspector and src/conformance import only src/protocol and src/core (and each other where a type is shared).',
            },
            {
              target: './src/adapters',
              from: ['./src/edge', './src/app', './src/cli', './src/chat', './src/agent-client', './worker'],
              message: 'An adapter moves bytes for a store: it imports no host, app or client above it.',
            },
            {
              target: './src/edge',
              from: ['./src/app', './src/cli', './src/chat', './src/agent-client', './worker'],
              message: 'The edge host imports the layers below it, never the HTTP app or the clients.',
            },
          ],
        },
      ],
    },
  },
);
