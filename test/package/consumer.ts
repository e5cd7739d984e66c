/**
 * The consumer project of the packaging tests (test/package/fixtures/consumer): a strict
 * TypeScript project for Node plus a user's Worker, installed from the packed tarball. Shared by
 * package.test.ts (`npm test`) and package.deep.test.ts (`npm run test:deep`), which each pack once
 * and install their own copy.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packageEntries, type PackageEntry } from '../../scripts/package-entries.js';
import { installConsumer, offlineEnv, ROOT, run, type PackedPackage } from './harness.js';
import { readmeSnippets } from './readme-snippets.js';

const FIXTURES = path.join(ROOT, 'test', 'package', 'fixtures');
/**
 * The compilers a consumer is checked with: TypeScript 7 (what `npm install typescript` gives a
 * user today; `@typescript/native`, an alias) in `npm test`, and 5.9 (the repository's `typescript`,
 * still what many projects and tools pin) in `npm run test:deep`.
 */
const TSC = {
  '7': path.join(ROOT, 'node_modules', '@typescript', 'native', 'bin', 'tsc'),
  '5.9': path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
} as const;
export type ConsumerCompiler = keyof typeof TSC;

let lock: { packages: Record<string, { version: string }> } | undefined;
/** The version the repository installed of `name` (consumers install the same, offline). */
export function pinned(name: string): string {
  lock ??= JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
  const entry = lock.packages[`node_modules/${name}`];
  if (entry === undefined) throw new Error(`${name} is not in package-lock.json`);
  return entry.version;
}

export function writeJson(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** The entries of `package.json` whose source exists (the others are skipped with a warning). */
export function presentEntries(): PackageEntry[] {
  const entries = packageEntries();
  for (const entry of entries.filter((e) => !e.present)) {
    console.warn(`[package test] skipping ${entry.name} (${entry.specifier}): ${entry.source} does not exist yet`);
  }
  return entries.filter((entry) => entry.present);
}

/** tsconfig programs of the consumer: `tsconfig.<name>.json`. */
export type ConsumerProgram = 'node.nodenext' | 'worker.nodenext' | 'node.bundler' | 'worker.bundler';

/** The installed consumer project. */
export interface Consumer {
  /** Its directory. */
  dir: string;
  /**
   * Runs tsc (TypeScript 7 unless `compiler` says 5.9) on `tsconfig.<program>.json` once per file
   * run; rejects with its output. Resolves to the list of the files the program read (`--listFiles`).
   */
  typeCheck(program: ConsumerProgram, compiler?: ConsumerCompiler): Promise<string>;
}

/**
 * Node consumer: agent-ledger + the optional peers except better-sqlite3 (fs-native-extensions,
 * pg) + the types tsc needs, and a user's Worker (src/worker, wrangler.toml). Copies the fixture to
 * `dir`, installs offline and writes the generated sources (every present entry, the README
 * snippets, the Worker's app mount).
 */
export async function installNodeConsumer(dir: string, packed: PackedPackage): Promise<Consumer> {
  mkdirSync(dir, { recursive: true });
  cpSync(path.join(FIXTURES, 'consumer'), dir, { recursive: true });
  writeJson(path.join(dir, 'package.json'), {
    name: 'consumer-app',
    private: true,
    type: 'module',
    dependencies: { 'agent-ledger': '*', 'fs-native-extensions': pinned('fs-native-extensions'), pg: pinned('pg'), ws: pinned('ws') },
    devDependencies: {
      '@types/node': pinned('@types/node'),
      '@types/pg': pinned('@types/pg'),
      '@types/ws': pinned('@types/ws'),
      '@cloudflare/workers-types': pinned('@cloudflare/workers-types'),
    },
  });
  await installConsumer(dir, packed);
  writeConsumerSources(dir);
  const checked = new Map<string, Promise<string>>();
  return {
    dir,
    typeCheck(program, compiler = '7') {
      const key = `${program} ${compiler}`;
      let pending = checked.get(key);
      if (pending === undefined) {
        pending = run(process.execPath, [TSC[compiler], '-p', `tsconfig.${program}.json`, '--listFiles'], { cwd: dir, env: offlineEnv(), timeoutMs: 240_000 }).then((result) => {
          if (result.code !== 0) throw new Error(`tsc ${compiler} -p tsconfig.${program}.json failed:\n${result.output}`);
          return result.output;
        });
        // A check started early and awaited by a later test must not count as unhandled meanwhile.
        pending.catch(() => undefined);
        checked.set(key, pending);
      }
      return pending;
    },
  };
}

/** Writes the generated consumer sources (every present Node entry, README snippets, the Worker). */
function writeConsumerSources(dir: string): void {
  const lines = presentEntries()
    .filter((entry) => entry.kind === 'export' && !entry.workersOnly)
    .map((entry, index) => `import * as entry${index} from '${entry.specifier}';\nexport { entry${index} };`);
  writeFileSync(path.join(dir, 'src', 'all-entries.ts'), `${lines.join('\n')}\n`);
  mkdirSync(path.join(dir, 'snippets'), { recursive: true });
  for (const snippet of readmeSnippets().filter((s) => s.runner === 'node' || s.runner === 'client' || s.runner === 'compile')) {
    writeFileSync(path.join(dir, 'snippets', `${snippet.name}.ts`), snippet.code);
  }
  prepareWorker(dir);
}

/** Whether the packed worker entry exports `name` (pkg-surface adds the app and router). */
function workerExports(dir: string, name: string): boolean {
  const declarations = path.join(dir, 'node_modules', 'agent-ledger', 'dist', 'worker.d.ts');
  return new RegExp(`\\b${name}\\b`).test(readFileSync(declarations, 'utf8'));
}

/** Fills the placeholders of the consumer Worker: mount the exported app once it exists. */
function prepareWorker(dir: string): void {
  const file = path.join(dir, 'src', 'worker', 'worker.ts');
  let source = readFileSync(file, 'utf8');
  if (workerExports(dir, 'createApp')) {
    source = source
      .replace('/*APP_IMPORT*/', "import { createApp } from 'agent-ledger/worker';")
      .replace('/*APP_SETUP*/', 'const app = createApp();')
      .replace('/*APP_FETCH*/', 'return app.fetch(request, env, ctx);');
  } else {
    console.warn('[package test] agent-ledger/worker exports no createApp yet: the consumer Worker mounts SessionObject and DurableObjectEventStore only');
  }
  writeFileSync(file, source);
}
