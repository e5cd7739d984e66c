/**
 * The package's entry points, read from `package.json` (the single list): every `exports`
 * subpath and every `bin` command, each with the built files it promises and the source file
 * that builds them.
 *
 * Convention: a built file `./dist/<path>.js` (and its `./dist/<path>.d.ts`) comes from
 * `src/<path>.ts`. Adding an entry point is therefore one line in `exports`. An entry whose source
 * does not exist yet (another part of the project has not landed) is reported as `missing`: the
 * build and the packaging checks skip it with a warning instead of failing.
 *
 * Used by `tsup.config.ts`, `scripts/check-package.ts` and the packaging test.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (the directory of `package.json`). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../', import.meta.url));

/** One entry point of the package. */
export interface PackageEntry {
  /** `exports` subpath (`.`, `./advanced`, ...) or `bin:<command>`. */
  readonly name: string;
  readonly kind: 'export' | 'bin';
  /** The import specifier a user writes (`agent-ledger/advanced`); the command name for a bin. */
  readonly specifier: string;
  /** Built JavaScript, relative to the package root (`dist/advanced.js`). */
  readonly js: string;
  /** Built declarations (`dist/advanced.d.ts`); undefined for a bin. */
  readonly types: string | undefined;
  /** Source file (`src/advanced.ts`). */
  readonly source: string;
  /** Key of the tsup entry (`advanced`, `conformance/index`, `cli/main`). */
  readonly buildKey: string;
  /** Whether the entry only loads inside the Workers runtime (it imports `cloudflare:*`). */
  readonly workersOnly: boolean;
  /** Whether the source file exists. */
  readonly present: boolean;
}

interface PackageJson {
  name: string;
  exports: Record<string, string | { types?: string; import?: string }>;
  bin?: Record<string, string>;
}

/** Entries whose declarations need the Workers types instead of Node's. */
const WORKERS_ONLY = new Set(['./worker']);

function normalize(file: string): string {
  return file.replace(/^\.\//, '');
}

function fromBuilt(js: string): { source: string; buildKey: string } {
  const match = /^dist\/(.+)\.js$/.exec(js);
  if (match === null || match[1] === undefined) throw new Error(`built file ${js} is not dist/<path>.js`);
  return { source: `src/${match[1]}.ts`, buildKey: match[1] };
}

/** Reads `package.json` and lists every entry point (present or not). */
export function packageEntries(root: string = PACKAGE_ROOT): PackageEntry[] {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as PackageJson;
  const entries: PackageEntry[] = [];
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target === 'string') continue; // `./package.json`
    if (target.import === undefined) throw new Error(`exports["${subpath}"] has no "import" condition`);
    const js = normalize(target.import);
    const { source, buildKey } = fromBuilt(js);
    entries.push({
      name: subpath,
      kind: 'export',
      specifier: subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`,
      js,
      types: target.types === undefined ? undefined : normalize(target.types),
      source,
      buildKey,
      workersOnly: WORKERS_ONLY.has(subpath),
      present: existsSync(path.join(root, source)),
    });
  }
  for (const [command, target] of Object.entries(pkg.bin ?? {})) {
    const js = normalize(target);
    const { source, buildKey } = fromBuilt(js);
    entries.push({
      name: `bin:${command}`,
      kind: 'bin',
      specifier: command,
      js,
      types: undefined,
      source,
      buildKey,
      workersOnly: false,
      present: existsSync(path.join(root, source)),
    });
  }
  return entries;
}

/** The entries that can be built now; prints one warning per entry whose source is missing. */
export function presentEntries(root: string = PACKAGE_ROOT, warn: (message: string) => void = console.warn): PackageEntry[] {
  const all = packageEntries(root);
  for (const entry of all) {
    if (!entry.present) warn(`warning: skipping entry ${entry.name} (${entry.specifier}): ${entry.source} does not exist yet`);
  }
  return all.filter((entry) => entry.present);
}
