/**
 * Helpers of the packaging tests: pack the package, install the tarball into a fresh project the
 * way a user would, offline, and run commands there.
 *
 * Offline install. A new project has no lockfile, and `npm install` would need the registry's
 * package documents, which `npm ci` never caches. So the consumer gets a lockfile derived from the
 * repository's: the tarball entry (its integrity computed here) plus, for every dependency the
 * consumer needs, the very entry (version + integrity) the repository installed, at the same
 * place in the tree. `npm ci --offline` then takes every tarball from the local npm cache by its
 * integrity; any attempt to reach the network fails (`--offline`, and proxies pointing at a
 * closed local port).
 *
 * Install scripts are skipped (`--ignore-scripts`): none of the runtime dependencies has one, and
 * better-sqlite3's would try to download a prebuilt addon and then compile it (a minute on CI).
 * When a consumer installs better-sqlite3, the addon the repository built for the same version and
 * the same Node is copied in, which is what its install step would have produced.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildInputsDigest, forgetBuild, isBuildCurrent, recordBuild } from '../../scripts/build-stamp.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The repository's tools (wrangler, tsc, tsx) for commands run inside consumer projects. */
export const ROOT_BIN = path.join(ROOT, 'node_modules', '.bin');

/** Environment for every child process: offline, no telemetry, no Cloudflare account. */
export function offlineEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Variables npm sets for the script it runs (vitest may run under `npm test`) would carry this
  // repository's prefix and settings into the consumer's npm.
  for (const name of Object.keys(env)) {
    if (/^npm_/i.test(name)) delete env[name];
  }
  for (const name of ['CLOUDFLARE_API_TOKEN', 'CLOUDFLARE_API_KEY', 'CLOUDFLARE_EMAIL', 'CLOUDFLARE_ACCOUNT_ID', 'NODE_OPTIONS']) {
    delete env[name];
  }
  return {
    ...env,
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    WRANGLER_SEND_METRICS: 'false',
    WRANGLER_HIDE_BANNER: 'true',
    HTTPS_PROXY: 'http://127.0.0.1:9',
    HTTP_PROXY: 'http://127.0.0.1:9',
    https_proxy: 'http://127.0.0.1:9',
    http_proxy: 'http://127.0.0.1:9',
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    ...extra,
  };
}

/** Result of {@link run}. */
export interface RunResult {
  code: number | null;
  output: string;
}

/** Runs a command to completion, capturing stdout and stderr together. */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? offlineEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so a timeout kills what it started too (npm's lifecycle scripts).
      detached: true,
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      output += `\n[harness] killed after ${options.timeoutMs ?? 0} ms`;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL'); // the group is gone already
      }
    }, options.timeoutMs ?? 300_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** Runs a command and throws with its output unless it exits 0. */
export async function runOk(command: string, args: readonly string[], options: Parameters<typeof run>[2]): Promise<string> {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited ${String(result.code)} in ${options.cwd}\n${result.output.slice(-6000)}`);
  }
  return result.output;
}

/**
 * `npm` as a Node script (no shell, no PATH lookup): the one beside this Node, else the one that
 * started the run (`npm_execpath`; the Node binaries of scripts/test-node-versions.mjs ship no npm).
 */
export function npmCli(): string {
  const candidates = [
    path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js'),
    process.env['npm_execpath'],
  ];
  for (const candidate of candidates) {
    if (candidate !== undefined && candidate.endsWith('npm-cli.js') && existsSync(candidate)) return candidate;
  }
  throw new Error('npm-cli.js not found next to this Node');
}

/** Runs npm with the given arguments. */
export function npm(args: readonly string[], options: Parameters<typeof run>[2]): Promise<string> {
  return runOk(process.execPath, [npmCli(), ...args], options);
}

/** A packed tarball of this repository. */
export interface PackedPackage {
  /** Absolute path of the `.tgz`. */
  tarball: string;
  /** The packed `package.json`. */
  manifest: PackedManifest;
  /** The copy of the repository that was packed (see {@link packPackage}). */
  root: string;
  /** `sha512-...` of the tarball. */
  integrity: string;
  /** Whether the pack reused the repository's current `dist/` instead of building (scripts/build-stamp.ts). */
  reusedBuild: boolean;
  /** What `npm pack` printed (its `prepack` says whether it built). */
  packOutput: string;
}

/** The parts of `package.json` the harness reads. */
export interface PackedManifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  bin?: Record<string, string>;
  exports: Record<string, unknown>;
}

/** What a pack reads from the repository: the build's inputs and the files the package ships. */
const PACK_INPUTS = ['package.json', 'package-lock.json', 'tsup.config.ts', 'tsconfig.json', 'src', 'scripts', 'worker', 'docs', 'README.md', 'LICENSE'];

/**
 * `npm pack` (its `prepack` script builds `dist/` unless it is current, scripts/build-stamp.ts, and
 * strips `package.json`; `postpack` puts it back) into `destination`, run in a copy of the
 * repository's pack inputs with `node_modules` linked. In the repository itself the pack would
 * rewrite `package.json` and `dist/` while other test files run: every `wrangler dev` watching
 * its bundle's inputs reloads on the rewrite (dropping its objects and their WebSockets), and the
 * CLI's built-bin test would find `dist/` half cleaned. `reuseBuild: false` makes `prepack` build
 * in the copy even when the repository's `dist/` is current.
 */
export async function packPackage(destination: string, options: { reuseBuild?: boolean } = {}): Promise<PackedPackage> {
  mkdirSync(destination, { recursive: true });
  // Beside `destination`, so the caller's cleanup of its work directory removes it too.
  const root = mkdtempSync(path.join(path.dirname(destination), 'pack-root-'));
  for (const entry of PACK_INPUTS) {
    if (existsSync(path.join(ROOT, entry))) cpSync(path.join(ROOT, entry), path.join(root, entry), { recursive: true });
  }
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(root, 'node_modules'), 'dir');
  // `npm ci` built `dist/` through `prepare`: when the build inputs are unchanged since, the copy
  // gets that build and its record, and `prepack` does not build the same files again.
  const digest = buildInputsDigest(ROOT);
  const reusedBuild = options.reuseBuild !== false && isBuildCurrent(ROOT, digest);
  if (reusedBuild) {
    if (buildInputsDigest(root) !== digest) throw new Error(`the copy in ${root} differs from the repository in a build input`);
    cpSync(path.join(ROOT, 'dist'), path.join(root, 'dist'), { recursive: true });
    recordBuild(root, digest);
  }
  // A hang guard: on a machine busy with other runs the build's two tsc programs took minutes.
  let packOutput: string;
  try {
    packOutput = await npm(['pack', '--pack-destination', destination], { cwd: root, env: offlineEnv(), timeoutMs: 420_000 });
  } finally {
    forgetBuild(root); // the copy's record sits in the linked node_modules/.cache
  }
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as PackedManifest;
  const tarball = path.join(destination, `${manifest.name}-${manifest.version}.tgz`);
  if (!existsSync(tarball)) throw new Error(`npm pack did not write ${tarball}; found ${readdirSync(destination).join(', ')}`);
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  return { tarball, manifest, integrity, root, reusedBuild, packOutput };
}

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  bin?: Record<string, string>;
  [key: string]: unknown;
}

interface Lockfile {
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
}

let rootLock: Lockfile | undefined;
function repositoryLock(): Lockfile {
  rootLock ??= JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as Lockfile;
  return rootLock;
}

/** Where Node would find `name` from the package installed at `from` (a lockfile path). */
function resolveInLock(lock: Lockfile, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
    if (lock.packages[candidate] !== undefined) return candidate;
    if (base === '') return undefined;
    const index = base.lastIndexOf('/node_modules/');
    base = index === -1 ? '' : base.slice(0, index);
  }
}

/** Copies an entry of the repository's lock without the flags that describe the repository. */
function cleanEntry(entry: LockEntry): LockEntry {
  const { dev: _dev, optional: _optional, devOptional: _devOptional, peer: _peer, ...rest } = entry;
  return rest;
}

/** The consumer's `package.json` as the harness writes or reads it. */
export interface ConsumerManifest {
  name: string;
  private?: boolean;
  type?: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  [key: string]: unknown;
}

/**
 * Writes `package-lock.json` for `manifest` in `dir`: `agent-ledger` from the tarball (copied into
 * `dir`), every other package as the repository's lock has it.
 */
export function writeConsumerLock(dir: string, manifest: ConsumerManifest, packed: PackedPackage): void {
  const lock = repositoryLock();
  const tarballName = path.basename(packed.tarball);
  copyFileSync(packed.tarball, path.join(dir, tarballName));
  const packages: Record<string, LockEntry> = {
    '': {
      name: manifest.name,
      ...(manifest.dependencies === undefined ? {} : { dependencies: manifest.dependencies }),
      ...(manifest.devDependencies === undefined ? {} : { devDependencies: manifest.devDependencies }),
    },
  };
  const pending: Array<{ from: string; name: string }> = [];
  for (const name of Object.keys({ ...manifest.dependencies, ...manifest.devDependencies })) {
    if (name === packed.manifest.name) continue;
    pending.push({ from: '', name });
  }
  const selfPath = `node_modules/${packed.manifest.name}`;
  packages[selfPath] = {
    version: packed.manifest.version,
    resolved: `file:${tarballName}`,
    integrity: packed.integrity,
    license: 'MIT',
    ...(packed.manifest.dependencies === undefined ? {} : { dependencies: packed.manifest.dependencies }),
    ...(packed.manifest.bin === undefined ? {} : { bin: packed.manifest.bin }),
    ...(packed.manifest.peerDependencies === undefined ? {} : { peerDependencies: packed.manifest.peerDependencies }),
    ...(packed.manifest.peerDependenciesMeta === undefined ? {} : { peerDependenciesMeta: packed.manifest.peerDependenciesMeta }),
  };
  for (const name of Object.keys(packed.manifest.dependencies ?? {})) pending.push({ from: selfPath, name });
  while (pending.length > 0) {
    const { from, name } = pending.pop() as { from: string; name: string };
    // A dependency of agent-ledger resolves from the repository root in the repository's lock.
    const lookupFrom = from === selfPath ? '' : from;
    const found = resolveInLock(lock, lookupFrom, name);
    if (found === undefined) throw new Error(`${name} (needed by ${from || 'the consumer'}) is not in package-lock.json`);
    if (packages[found] !== undefined) continue;
    const entry = lock.packages[found] as LockEntry;
    packages[found] = cleanEntry(entry);
    for (const dep of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
      if (resolveInLock(lock, found, dep) === undefined && entry.optionalDependencies?.[dep] !== undefined) continue;
      pending.push({ from: found, name: dep });
    }
  }
  writeFileSync(path.join(dir, 'package-lock.json'), `${JSON.stringify({ name: manifest.name, lockfileVersion: 3, requires: true, packages }, null, 2)}\n`);
}

/**
 * Installs `dir`'s `package.json` (agent-ledger from the tarball) offline with `npm ci`.
 * `omitDev`: leave `devDependencies` out (tools then come from {@link ROOT_BIN}).
 */
export async function installConsumer(dir: string, packed: PackedPackage, options: { omitDev?: boolean } = {}): Promise<void> {
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as ConsumerManifest;
  const tarballName = path.basename(packed.tarball);
  for (const field of ['dependencies', 'devDependencies'] as const) {
    const deps = manifest[field];
    if (deps?.[packed.manifest.name] !== undefined) deps[packed.manifest.name] = `file:${tarballName}`;
  }
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  writeConsumerLock(dir, manifest, packed);
  await npm(['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', ...(options.omitDev === true ? ['--omit=dev'] : [])], {
    cwd: dir,
    env: offlineEnv(),
    timeoutMs: 240_000,
  });
  placeNativeAddons(dir);
}

/**
 * Puts the repository's better-sqlite3 addon into a consumer that installed better-sqlite3 (see the
 * header). On another Node, scripts/test-node-versions.mjs names in AGENT_LEDGER_BETTER_SQLITE3_DIR
 * the copy it built for that Node.
 */
function placeNativeAddons(dir: string): void {
  const target = path.join(dir, 'node_modules', 'better-sqlite3');
  if (!existsSync(target)) return;
  const source = process.env['AGENT_LEDGER_BETTER_SQLITE3_DIR'] ?? path.join(ROOT, 'node_modules', 'better-sqlite3');
  const built = path.join(source, 'build', 'Release', 'better_sqlite3.node');
  mkdirSync(path.join(target, 'build', 'Release'), { recursive: true });
  copyFileSync(built, path.join(target, 'build', 'Release', 'better_sqlite3.node'));
}
