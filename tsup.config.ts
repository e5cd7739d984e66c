/**
 * Build: `npm run build` (also run by `prepare`, and by `prepack` when a build input changed since
 * the last build: scripts/build-stamp.ts) -> `dist/`.
 *
 * 1. JavaScript: tsup (esbuild) bundles every entry point listed in `package.json` (`exports` and
 *    `bin`, see scripts/package-entries.ts) as ESM for Node 20, with code splitting so that all
 *    entries share one copy of each module (one `DurableError` class, one zod schema set).
 *    Dependencies and peer dependencies stay external, and so do `node:*` and `cloudflare:*`
 *    (the Workers runtime provides `cloudflare:workers`). An entry whose source does not exist
 *    yet is skipped with a warning.
 * 2. Declarations: `tsc --emitDeclarationOnly --noCheck` over the same entries, mirroring `src/` under
 *    `dist/` (`src/advanced.ts` -> `dist/advanced.d.ts`). tsc rather than tsup's bundled `.d.ts`:
 *    bundling declarations per entry would give each entry its own copy of the branded ID types
 *    (`unique symbol` brands), so a `SessionId` from `agent-ledger` would not be assignable to one
 *    from `agent-ledger/worker`. Two programs, because Node's and the Workers' global types
 *    conflict: the Workers-only entries with worker/tsconfig.json, the rest with tsconfig.json.
 * 3. A record of the inputs this build read (scripts/build-stamp.ts), once both steps succeeded.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'tsup';
import { buildInputsDigest, recordBuild } from './scripts/build-stamp.js';
import { PACKAGE_ROOT, presentEntries, type PackageEntry } from './scripts/package-entries.js';

const entries = presentEntries();
/** The inputs as this build reads them, recorded when it succeeds (scripts/build-stamp.ts). */
const inputsDigest = buildInputsDigest(PACKAGE_ROOT);
const CACHE = path.join(PACKAGE_ROOT, 'node_modules', '.cache', 'agent-ledger-build');

/** Emits the declarations of `group` with the compiler options of `baseConfig`. */
function emitDeclarations(name: string, baseConfig: string, group: PackageEntry[]): void {
  if (group.length === 0) return;
  mkdirSync(CACHE, { recursive: true });
  const configPath = path.join(CACHE, `tsconfig.${name}.json`);
  const config = {
    extends: path.join(PACKAGE_ROOT, baseConfig),
    compilerOptions: {
      noEmit: false,
      declaration: true,
      emitDeclarationOnly: true,
      outDir: path.join(PACKAGE_ROOT, 'dist'),
      rootDir: path.join(PACKAGE_ROOT, 'src'),
      incremental: false,
      // Emit only: `npm run typecheck` (part of `npm test`) checks the same sources. Skipping the
      // check halves the declaration build (30 s -> 16 s on the 2-core machine); the output was
      // compared by diff and differs only in the order of some union members.
      noCheck: true,
    },
    files: group.map((entry) => path.join(PACKAGE_ROOT, entry.source)),
    include: [],
    exclude: [],
  };
  writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  const tsc = path.join(PACKAGE_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', configPath], { cwd: PACKAGE_ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`tsc (${name} declarations) failed with exit code ${String(result.status)}`);
}

export default defineConfig({
  entry: Object.fromEntries(entries.map((entry) => [entry.buildKey, entry.source])),
  outDir: 'dist',
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  splitting: true,
  sourcemap: false,
  clean: true,
  dts: false,
  external: [/^node:/, /^cloudflare:/],
  async onSuccess() {
    const exported = entries.filter((entry) => entry.kind === 'export');
    emitDeclarations('workers', 'worker/tsconfig.json', exported.filter((entry) => entry.workersOnly));
    emitDeclarations('node', 'tsconfig.json', exported.filter((entry) => !entry.workersOnly));
    recordBuild(PACKAGE_ROOT, inputsDigest);
  },
});
