/**
 * Heavier variants of test/package/package.test.ts, run by `npm run test:deep` only (its own pack
 * and installs, test/package/consumer.ts):
 *
 * 1. The consumer type-checked by TypeScript 5.9: under `moduleResolution: bundler` (Node and
 *    Worker programs) and under nodenext with the shipped `.d.ts`. In `npm test`, TypeScript 7
 *    checks the same nodenext programs, attw (ESM-only profile, 5.9's compiler API) resolves every
 *    entry's types as `bundler` on the same tarball, and `wrangler deploy --dry-run` bundles the
 *    user's Worker through bundler resolution.
 * 2. Every `examples/<name>/`: installed from the tarball offline, then its own `npm test`
 *    (examples/README.md). In `npm test`, "a user Worker" and "the README client snippet"
 *    type-check, bundle and serve (workerd) a user's SessionObject subclass with its own tool and
 *    routes from the installed package, as worker-app does; "runs the README Node snippets" runs
 *    the Quick start on JSONL from the installed package, as node-agent does, and the session's
 *    kill -9 resume is proved from source by test/session and test/e2e.
 *
 * 3. The pack builds `dist/` itself (`prepack`), and when the repository's `dist/` is current
 *    (scripts/build-stamp.ts) the tarball holds exactly its files: what package.test.ts, which packs
 *    that `dist/` without building again, relies on.
 *
 * Each of the two files packs: run them in separate vitest runs (as `npm test` and `test:deep`
 * do), never side by side, or two `npm pack` would rebuild dist/ at once.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installConsumer, npmCli, offlineEnv, packPackage, ROOT, run, runOk, type ConsumerManifest, type PackedPackage } from './harness.js';
import { isBuildCurrent } from '../../scripts/build-stamp.js';
import { installNodeConsumer, writeJson, type Consumer } from './consumer.js';

const work = mkdtempSync(path.join(tmpdir(), 'agent-ledger-package-deep-'));
let packed: PackedPackage;
let consumer: Consumer;

beforeAll(async () => {
  // A build of its own (`prepack` runs tsup in the copy), compared below with the `dist/` that
  // package.test.ts's pack reuses.
  packed = await packPackage(path.join(work, 'pack'), { reuseBuild: false });
  consumer = await installNodeConsumer(path.join(work, 'app'), packed);
}, 600_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true, maxRetries: 3 });
}, 180_000);

describe('the build in the pack', () => {
  it('builds when asked to, and gives the same files as the current dist/ of the repository', async () => {
    expect(packed.reusedBuild).toBe(false);
    if (!isBuildCurrent(ROOT)) {
      console.warn('dist/ of the repository is not current (an input changed since its build): nothing to compare');
      return;
    }
    const unpacked = path.join(work, 'unpacked');
    mkdirSync(unpacked);
    await runOk('tar', ['-xzf', packed.tarball, '-C', unpacked], { cwd: work });
    const files = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) => statSync(path.join(dir, file)).isFile()).sort();
    const built = path.join(unpacked, 'package', 'dist');
    const current = path.join(ROOT, 'dist');
    expect(files(built)).toEqual(files(current));
    for (const file of files(built)) expect(readFileSync(path.join(built, file)).equals(readFileSync(path.join(current, file))), file).toBe(true);
  }, 120_000);
});

describe('TypeScript consumer, moduleResolution bundler', () => {
  it('type-checks the Node consumer and the user Worker', async () => {
    await Promise.all([consumer.typeCheck('node.bundler', '5.9'), consumer.typeCheck('worker.bundler', '5.9')]);
  }, 240_000);
});

describe('TypeScript consumer, TypeScript 5.9', () => {
  it('type-checks the Node consumer and the user Worker, nodenext, shipped .d.ts included', async () => {
    await Promise.all([consumer.typeCheck('node.nodenext', '5.9'), consumer.typeCheck('worker.nodenext', '5.9')]);
  }, 240_000);
});

/** Tools the repository provides on PATH instead of installing a second copy into each example. */
const PROVIDED_TOOLS = new Set(['wrangler', 'typescript', 'tsx', 'vitest']);
const EXAMPLES = path.join(ROOT, 'examples');
const examples = existsSync(EXAMPLES)
  ? readdirSync(EXAMPLES, { withFileTypes: true })
      .filter((dirent) => dirent.isDirectory() && existsSync(path.join(EXAMPLES, dirent.name, 'package.json')))
      .map((dirent) => dirent.name)
      .sort()
  : [];

describe('examples (examples/README.md)', () => {
  it('has examples', () => {
    expect(examples).toContain('worker-app');
  });

  it.each(examples)('examples/%s: installs from the tarball offline and passes its own npm test', async (name) => {
    const dir = path.join(work, 'examples', name);
    cpSync(path.join(EXAMPLES, name), dir, {
      recursive: true,
      filter: (source) => !/[\\/](node_modules|\.wrangler|dist)([\\/]|$)/.test(path.relative(EXAMPLES, source)),
    });
    const manifestPath = path.join(dir, 'package.json');
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as ConsumerManifest;
    expect(manifest.dependencies?.['agent-ledger'] ?? manifest.devDependencies?.['agent-ledger'], 'depends on agent-ledger').toBeDefined();
    expect((manifest['scripts'] as Record<string, string> | undefined)?.['test'], 'has a test script').toBeDefined();
    if (manifest.devDependencies !== undefined) {
      for (const tool of PROVIDED_TOOLS) delete manifest.devDependencies[tool];
    }
    writeJson(manifestPath, manifest);
    await installConsumer(dir, packed);
    const pathVariable = [path.join(ROOT, 'node_modules', '.bin'), process.env['PATH'] ?? ''].join(path.delimiter);
    const result = await run(process.execPath, [npmCli(), 'test'], {
      cwd: dir,
      env: offlineEnv({ PATH: pathVariable }),
      timeoutMs: 240_000,
    });
    expect(result.code, result.output).toBe(0);
  }, 300_000);
});
