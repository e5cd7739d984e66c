/**
 * Whether `dist/` was built from the build inputs as they are now, so that `npm pack` builds only
 * when an input changed (`prepack` runs `build-if-stale`). `npm ci` builds once through `prepare`;
 * packing right after it (the package test packs a copy of the repository in every `npm test`)
 * then reuses that build instead of bundling and emitting the declarations again.
 *
 * The build (tsup.config.ts) records a SHA-256 of its inputs ({@link BUILD_INPUTS}: the sources,
 * the build and compiler configuration, the manifest and the lockfile) when it succeeds, taken
 * before it started, so an edit made during a build makes the next pack build again. The record
 * sits in `node_modules/.cache/agent-ledger-build/`, keyed by the absolute `dist/` path: a copy of
 * the repository whose `node_modules` links to this one keeps its own record. No record, another
 * digest or no `dist/index.js` means stale, and `build-if-stale` runs the build.
 *
 * @example
 * node --import tsx scripts/build-stamp.ts build-if-stale
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT } from './package-entries.js';

/** What the build reads, relative to the package root (a directory counts with every file in it). */
export const BUILD_INPUTS = [
  'src',
  'tsup.config.ts',
  'tsconfig.json',
  'worker/tsconfig.json',
  'scripts/package-entries.ts',
  'scripts/build-stamp.ts',
  'package.json',
  'package-lock.json',
] as const;

function filesOf(root: string, relative: string, out: string[]): void {
  const absolute = path.join(root, relative);
  if (!existsSync(absolute)) return;
  if (!statSync(absolute).isDirectory()) {
    out.push(relative);
    return;
  }
  for (const name of readdirSync(absolute).sort()) filesOf(root, path.posix.join(relative, name), out);
}

/** SHA-256 (hex) over the path and content of every build input under `root`. */
export function buildInputsDigest(root: string = PACKAGE_ROOT): string {
  const files: string[] = [];
  for (const input of BUILD_INPUTS) filesOf(root, input, files);
  const hash = createHash('sha256');
  for (const file of files) {
    const content = readFileSync(path.join(root, file));
    hash.update(`${file}\0${String(content.length)}\0`);
    hash.update(content);
  }
  return hash.digest('hex');
}

function recordPath(root: string): string {
  const key = createHash('sha256').update(path.resolve(root, 'dist')).digest('hex').slice(0, 16);
  return path.join(root, 'node_modules', '.cache', 'agent-ledger-build', `dist-${key}.sha256`);
}

/** Records that `root`'s `dist/` holds the build of inputs with `digest`. */
export function recordBuild(root: string, digest: string): void {
  const file = recordPath(root);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${digest}\n`);
}

/** Removes the record of `root`'s `dist/` (a temporary copy of the repository, before it is deleted). */
export function forgetBuild(root: string): void {
  rmSync(recordPath(root), { force: true });
}

/**
 * Whether `root`'s `dist/` was built from its build inputs as they are now (`digest`, computed
 * here unless the caller has it already).
 */
export function isBuildCurrent(root: string = PACKAGE_ROOT, digest?: string): boolean {
  const file = recordPath(root);
  if (!existsSync(file) || !existsSync(path.join(root, 'dist', 'index.js'))) return false;
  return readFileSync(file, 'utf8').trim() === (digest ?? buildInputsDigest(root));
}

/** What `build-if-stale` prints when it does not build (the package test looks for it). */
export const CURRENT_MESSAGE = 'dist/ is current (its build inputs are unchanged): not built again';

/** Runs the build (tsup, which records the digest) unless `dist/` is current. */
export function buildIfStale(root: string = PACKAGE_ROOT): 'built' | 'current' {
  if (isBuildCurrent(root)) return 'current';
  const tsup = createRequire(path.join(root, 'package.json')).resolve('tsup/dist/cli-default.js');
  const result = spawnSync(process.execPath, [tsup], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`the build (tsup) failed with exit code ${String(result.status)}`);
  return 'built';
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const command = process.argv[2];
  if (command !== 'build-if-stale') {
    console.error('usage: node --import tsx scripts/build-stamp.ts build-if-stale');
    process.exit(2);
  }
  const outcome = buildIfStale();
  if (outcome === 'current') console.log(CURRENT_MESSAGE);
}
