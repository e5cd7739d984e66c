/**
 * Node arguments that run a TypeScript entry (a CLI, a test fixture) in a child process.
 *
 * Tests start hundreds of real child processes (kill -9 matrices, lock contention, the CLI). Under
 * `node --import tsx` each child resolves and transforms the whole module graph again, about half
 * a CPU-second before its first line runs. Instead, the first call for an entry bundles it with
 * esbuild (packages stay external, so native addons and optional peers load as in production)
 * into `node_modules/.cache/agent-ledger-children/`, and every child runs that one file with plain
 * `node`. The bundle is written to a temporary name and renamed, so test processes that bundle the
 * same entry at once never see a half-written file; each process bundles an entry once.
 *
 * `AGENT_LEDGER_CHILD_TSX=1` runs children under tsx instead (source-mapped stack traces).
 *
 * @example
 * spawn(process.execPath, [...tsChildArgs(FIXTURE), 'arg'], { cwd: ROOT });
 */
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';

const ROOT = path.resolve(import.meta.dirname, '..');
const OUT_DIR = path.join(ROOT, 'node_modules', '.cache', 'agent-ledger-children');
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
    packages: 'external',
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
