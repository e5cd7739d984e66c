/**
 * The package as a user gets it: `npm pack` (its `prepack` builds `dist/`), then the tarball
 * installed offline into fresh projects (test/package/harness.ts, test/package/consumer.ts), then:
 *
 * 1. every entry point of the `exports` map imported from a plain `.mjs` with plain `node`, and
 *    the README's Node snippets compiled and run there (the Quick start on JSONL);
 * 2. the README client snippet run with plain node against the user's Worker of 5, built from the
 *    installed package and served locally by workerd;
 * 3. the optional peers really optional: the JSONL store works with better-sqlite3 absent, the
 *    SQLite store with fs-native-extensions absent, and the missing one fails with a typed error
 *    naming the package to install;
 * 4. a TypeScript consumer type-checked with `strict`, `exactOptionalPropertyTypes` and
 *    `noUncheckedIndexedAccess` against the shipped `.d.ts` (`skipLibCheck: false`), under
 *    `moduleResolution` `nodenext`, for Node and for Workers (the two programs run side by side),
 *    by TypeScript 7, what `npm install typescript` gives a user today;
 * 5. a user's Worker (SessionObject subclass, the exported app when there is one) bundled by
 *    `wrangler deploy --dry-run`;
 * 6. publint (strict) and attw (ESM-only profile: every entry resolved as `node16` ESM and as
 *    `bundler`) on the tarball;
 * 7. the published package.json without the repository's scripts (scripts/publish-manifest.ts),
 *    and every `@types/*` package the consumer's compile pulls in (for the shipped `.d.ts` or a
 *    README snippet) named in the README.
 *
 * package.deep.test.ts (`npm run test:deep`) adds the same nodenext programs and the
 * `bundler`-resolution ones under TypeScript 5.9, and the examples' own `npm test`. One pack and
 * one install per project are shared by every test of this file. Entries declared in `package.json` whose source has not landed yet are skipped with a
 * warning.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageEntries } from '../../scripts/package-entries.js';
import { checkPackedTarball } from '../../scripts/check-package.js';
import { installConsumer, offlineEnv, packPackage, ROOT, runOk, type PackedPackage } from './harness.js';
import { installNodeConsumer, pinned, presentEntries, writeJson, type Consumer } from './consumer.js';
import { readmeSnippets } from './readme-snippets.js';
import { BACKUP, publishedManifest, UNPUBLISHED_FIELDS } from '../../scripts/publish-manifest.js';
import { CURRENT_MESSAGE, isBuildCurrent } from '../../scripts/build-stamp.js';
import { startLocalWorker } from '../http/local-worker.js';

const work = mkdtempSync(path.join(tmpdir(), 'agent-ledger-package-'));
const entries = packageEntries();
const present = presentEntries();

let packed: PackedPackage;
/** Node consumer with the user's Worker, without better-sqlite3 (test/package/consumer.ts). */
let consumer: Consumer;
let app: string;
/** Node consumer with better-sqlite3 and without fs-native-extensions. */
const sqliteApp = path.join(work, 'sqlite-app');

beforeAll(async () => {
  packed = await packPackage(path.join(work, 'pack'));
  mkdirSync(sqliteApp);
  writeJson(path.join(sqliteApp, 'package.json'), {
    name: 'consumer-sqlite-app',
    private: true,
    type: 'module',
    dependencies: { 'agent-ledger': '*', 'better-sqlite3': pinned('better-sqlite3') },
  });
  [consumer] = await Promise.all([installNodeConsumer(path.join(work, 'app'), packed), installConsumer(sqliteApp, packed)]);
  app = consumer.dir;
  // Both programs start now and run beside the tests that do not need them; the tests await them.
  void consumer.typeCheck('node.nodenext');
  void consumer.typeCheck('worker.nodenext');
}, 600_000);

afterAll(async () => {
  // Several installed projects and wrangler state: removing them can take a while on a busy disk.
  await rm(work, { recursive: true, force: true, maxRetries: 3 });
}, 180_000);

function node(cwd: string, script: string, args: string[] = []): Promise<string> {
  return runOk(process.execPath, [script, ...args], { cwd, env: offlineEnv(), timeoutMs: 60_000 });
}

describe('the tarball', () => {
  it('ships dist, the README, the docs, the LICENSE and package.json only', async () => {
    const listing = await runOk('tar', ['-tzf', packed.tarball], { cwd: work });
    const top = new Set(
      listing
        .split('\n')
        .filter(Boolean)
        .map((file) => file.replace(/^package\//, '').split('/')[0]),
    );
    expect([...top].sort()).toEqual(['LICENSE', 'README.md', 'dist', 'docs', 'package.json']);
    for (const entry of present) {
      expect(listing, entry.js).toContain(`package/${entry.js}`);
      if (entry.types !== undefined) expect(listing, entry.types).toContain(`package/${entry.types}`);
    }
  });

  it('ships a package.json without the repository scripts and leaves the repository one as it was', async () => {
    const shipped = JSON.parse(await runOk('tar', ['-xzOf', packed.tarball, 'package/package.json'], { cwd: work })) as Record<string, unknown>;
    for (const field of UNPUBLISHED_FIELDS) expect(shipped, field).not.toHaveProperty(field);
    // The pack ran in a copy of the repository (packPackage): its manifest is what postpack restored.
    const repository = JSON.parse(readFileSync(path.join(packed.root, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(repository['scripts'], 'postpack restored the repository manifest').toMatchObject({ prepare: expect.any(String), start: expect.any(String) });
    expect(repository).toEqual(JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')));
    const backup = path.join(packed.root, path.relative(ROOT, BACKUP));
    expect(existsSync(backup), backup).toBe(false);
    expect(shipped).toEqual(publishedManifest(repository));
  });

  it("reuses the build of npm ci while the build inputs are unchanged, and builds when one changed", () => {
    // In a fresh clone `prepare` built dist/, so the pack must not build again; after an edit it must.
    if (packed.reusedBuild) {
      expect(packed.packOutput).toContain(CURRENT_MESSAGE);
      expect(packed.packOutput).not.toContain('Build start');
    } else {
      expect(isBuildCurrent(ROOT)).toBe(false);
      expect(packed.packOutput).toContain('Build success');
    }
  });

  it('passes publint (strict) and attw (ESM-only profile)', async () => {
    const result = await checkPackedTarball(packed.tarball);
    expect(result.ok, result.report).toBe(true);
  }, 120_000);
});

describe('plain node', () => {
  it('imports every entry point of the exports map from a .mjs', async () => {
    const exported = present.filter((entry) => entry.kind === 'export');
    const script = [
      'const results = {};',
      ...exported.map(
        (entry) => `try { results[${JSON.stringify(entry.specifier)}] = Object.keys(await import(${JSON.stringify(entry.specifier)})).length; }
catch (error) { results[${JSON.stringify(entry.specifier)}] = { code: error.code, message: String(error.message) }; }`,
      ),
      'console.log(JSON.stringify(results));',
    ].join('\n');
    writeFileSync(path.join(app, 'import-all.mjs'), script);
    const output = await node(app, 'import-all.mjs');
    const results = JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as Record<string, number | { code: string; message: string }>;
    for (const entry of exported) {
      const result = results[entry.specifier];
      if (entry.workersOnly) {
        // It imports `cloudflare:workers`, which only the Workers runtime provides (bundled below).
        expect(result, entry.specifier).toMatchObject({ code: 'ERR_UNSUPPORTED_ESM_URL_SCHEME', message: expect.stringContaining('cloudflare:') });
      } else {
        expect(typeof result === 'number' && result > 0, `${entry.specifier}: ${JSON.stringify(result)}`).toBe(true);
      }
    }
  });

  it('runs the bin of every present bin entry', async () => {
    const bins = present.filter((entry) => entry.kind === 'bin');
    for (const entry of bins) {
      const output = await runOk(path.join(app, 'node_modules', '.bin', entry.specifier), ['--help'], { cwd: app, env: offlineEnv() });
      expect(output, entry.specifier).toMatch(/usage/i);
    }
    expect(bins.length + entries.filter((e) => e.kind === 'bin' && !e.present).length).toBeGreaterThan(0);
  });

  it('runs the README Node snippets (compiled by the nodenext program below) with plain node in an empty directory', async () => {
    const snippets = readmeSnippets().filter((snippet) => snippet.runner === 'node');
    expect(snippets.map((s) => s.name)).toContain('quick-start');
    await consumer.typeCheck('node.nodenext');
    for (const snippet of snippets) {
      const dataDir = mkdtempSync(path.join(work, `run-${snippet.name}-`));
      const output = await runOk(process.execPath, [path.join(app, 'out', 'snippets', `${snippet.name}.js`)], {
        cwd: dataDir,
        env: offlineEnv(),
        timeoutMs: 60_000,
      });
      for (const expected of snippet.expectOutput) expect(output, snippet.name).toContain(expected);
    }
  }, 240_000);
});

describe('the README client snippet', () => {
  it("runs with plain node against the user's Worker built from the installed package, served locally", async () => {
    const snippets = readmeSnippets().filter((snippet) => snippet.runner === 'client');
    expect(snippets.length).toBeGreaterThan(0);
    await consumer.typeCheck('node.nodenext');
    // The consumer's wrangler.toml: its MySessionObject and fetch handler, bundled from node_modules/agent-ledger.
    const worker = await startLocalWorker({ config: path.join(app, 'wrangler.toml') });
    try {
      for (const snippet of snippets) {
        const output = await runOk(process.execPath, [path.join(app, 'out', 'snippets', `${snippet.name}.js`)], {
          cwd: app,
          env: offlineEnv({ AGENT_LEDGER_URL: worker.url.origin, AGENT_LEDGER_TOKEN: worker.adminToken }),
          timeoutMs: 60_000,
        });
        for (const expected of snippet.expectOutput) expect(output, snippet.name).toContain(expected);
      }
      // The user's own route beside the mounted app, on the same Durable Object namespace.
      const head = await fetch(worker.href('/my/head?session=demo'));
      expect(await head.json()).toEqual({ head: null });
    } finally {
      await worker.stop();
    }
  }, 240_000);
});

describe('optional peer dependencies', () => {
  const jsonlScript = `
import { SessionId } from 'agent-ledger';
import { JsonlDurableEventStore } from 'agent-ledger/advanced';
const store = new JsonlDurableEventStore(process.argv[2]);
const session = SessionId('s-1');
try {
  const result = await store.append(session, [{ type: 'session_created', data: {} }], { expectedLastSequence: null });
  console.log(JSON.stringify({ ok: true, lastSequence: result.lastSequence, head: await store.getHeadSequence(session) }));
} catch (error) {
  console.log(JSON.stringify({ ok: false, name: error.name, code: error.code, message: error.message, details: error.details }));
}`;
  const sqliteScript = `
import { SessionId } from 'agent-ledger';
import { SqliteDurableEventStore } from 'agent-ledger/advanced';
try {
  const store = new SqliteDurableEventStore(process.argv[2] + '/ledger.db');
  const session = SessionId('s-1');
  const result = await store.append(session, [{ type: 'session_created', data: {} }], { expectedLastSequence: null });
  console.log(JSON.stringify({ ok: true, lastSequence: result.lastSequence, head: await store.getHeadSequence(session) }));
  store.close();
} catch (error) {
  console.log(JSON.stringify({ ok: false, name: error.name, code: error.code, message: error.message, details: error.details }));
}`;

  async function runStoreScript(cwd: string, name: string, code: string): Promise<Record<string, unknown>> {
    writeFileSync(path.join(cwd, name), code);
    const dataDir = mkdtempSync(path.join(work, 'data-'));
    const output = await node(cwd, name, [dataDir]);
    return JSON.parse(output.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
  }

  it('JSONL works without better-sqlite3; SQLite then names the package to install', async () => {
    expect(existsSync(path.join(app, 'node_modules', 'better-sqlite3'))).toBe(false);
    expect(await runStoreScript(app, 'jsonl.mjs', jsonlScript)).toEqual({ ok: true, lastSequence: 1, head: 1 });
    expect(await runStoreScript(app, 'sqlite.mjs', sqliteScript)).toMatchObject({
      ok: false,
      name: 'DurableEventStoreError',
      code: 'DURABLE_EVENT_UNAVAILABLE',
      message: expect.stringContaining('npm install better-sqlite3'),
      details: { missingPackage: 'better-sqlite3' },
    });
  });

  it('SQLite works without fs-native-extensions; JSONL then names the package to install', async () => {
    expect(existsSync(path.join(sqliteApp, 'node_modules', 'fs-native-extensions'))).toBe(false);
    expect(await runStoreScript(sqliteApp, 'sqlite.mjs', sqliteScript)).toEqual({ ok: true, lastSequence: 1, head: 1 });
    expect(await runStoreScript(sqliteApp, 'jsonl.mjs', jsonlScript)).toMatchObject({
      ok: false,
      name: 'DurableEventStoreError',
      code: 'DURABLE_EVENT_LOCK_FAILED',
      message: expect.stringContaining('npm install fs-native-extensions'),
      details: { missingPackage: 'fs-native-extensions' },
    });
  });
});

describe('TypeScript 7 consumer (strict, exactOptionalPropertyTypes)', () => {
  it('type-checks the Node consumer and the README snippets, nodenext, shipped .d.ts included', async () => {
    await consumer.typeCheck('node.nodenext');
  }, 240_000);

  it('names in the README every @types package the Node consumer needs (for the shipped .d.ts or a snippet)', async () => {
    const files = await consumer.typeCheck('node.nodenext');
    // `types: ["node"]` loads @types/node by itself; any other @types package is read only because
    // a shipped declaration or a README snippet imports its module.
    const needed = new Set([...files.matchAll(/node_modules\/(@types\/[^/]+)\//g)].map((match) => match[1] ?? ''));
    needed.delete('@types/node');
    for (const name of Object.keys(packed.manifest.dependencies ?? {})) needed.delete(name); // installed with the package
    expect([...needed].sort()).toEqual(expect.arrayContaining(['@types/pg', '@types/ws']));
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    for (const name of needed) expect(readme.includes(`\`${name}\``), `README names ${name}`).toBe(true);
  }, 240_000);

  it('type-checks the user Worker with the Workers types, nodenext, shipped .d.ts included', async () => {
    await consumer.typeCheck('worker.nodenext');
  }, 240_000);
});

describe('a user Worker', () => {
  it('bundles with wrangler deploy --dry-run, offline', async () => {
    const outdir = path.join(work, 'worker-bundle');
    const output = await runOk(process.execPath, [path.join(ROOT, 'node_modules', 'wrangler', 'bin', 'wrangler.js'), 'deploy', '--dry-run', '--outdir', outdir], {
      cwd: app,
      env: offlineEnv(),
      timeoutMs: 120_000,
    });
    expect(output).toContain('--dry-run: exiting now.');
    expect(output).toMatch(/env\.SESSIONS \(MySessionObject\)\s+Durable Object/);
    const bundle = readFileSync(path.join(outdir, 'worker.js'), 'utf8');
    expect(bundle).toMatch(/MySessionObject = class extends SessionObject/);
    expect(bundle).not.toMatch(/from\s+["']node:/);
  }, 120_000);
});
