/**
 * Lints the packed package with publint (strict) and "Are the types wrong?" (`attw`, profile
 * `esm-only`: the package is ESM-only, so CommonJS `require` and the old `node10` resolution are
 * out of scope).
 *
 * Entries declared in `package.json` whose source has not landed yet (see
 * scripts/package-entries.ts) are not in the tarball; their findings are skipped with a warning.
 *
 * `checkPackedTarball(tarball)` is used by the packaging test on its shared tarball;
 * `npm run check:package` packs (which builds) and checks on its own.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { PACKAGE_ROOT, packageEntries } from './package-entries.js';

/** Outcome of {@link checkPackedTarball}. */
export interface PackageCheckResult {
  ok: boolean;
  /** Human-readable findings of both tools (and the skipped entries). */
  report: string;
}

function attwBin(): string {
  return path.join(PACKAGE_ROOT, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js');
}

/** Runs publint and attw on a tarball produced by `npm pack` of this repository. */
export async function checkPackedTarball(tarball: string): Promise<PackageCheckResult> {
  const missing = packageEntries().filter((entry) => !entry.present);
  const lines: string[] = [];
  for (const entry of missing) lines.push(`warning: not checked yet: ${entry.name} (${entry.source} does not exist yet)`);
  const missingKeys = new Set(missing.map((entry) => (entry.kind === 'bin' ? `bin/${entry.specifier}` : `exports/${entry.name}`)));

  const bytes = readFileSync(tarball);
  const pkg = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
  const { messages } = await publint({
    pack: { tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) },
    strict: true,
    level: 'suggestion',
  });
  let ok = true;
  let reported = 0;
  for (const message of messages) {
    const key = message.path.slice(0, 2).join('/');
    if (message.code === 'FILE_DOES_NOT_EXIST' && missingKeys.has(key)) continue;
    reported += 1;
    lines.push(`publint ${message.type}: ${formatMessage(message, pkg, { color: false }) ?? message.code}`);
    if (message.type !== 'suggestion') ok = false;
  }

  const excluded = missing.filter((entry) => entry.kind === 'export').map((entry) => entry.name);
  const attw = spawnSync(
    process.execPath,
    [attwBin(), tarball, '--profile', 'esm-only', '--format', 'ascii', ...(excluded.length > 0 ? ['--exclude-entrypoints', ...excluded] : [])],
    { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } },
  );
  if (attw.status !== 0) {
    ok = false;
    lines.push(`attw failed (exit ${String(attw.status)}):`, attw.stdout, attw.stderr);
  } else {
    lines.push('attw: no problems (profile esm-only)');
  }
  lines.push(`publint: ${reported === 0 ? 'no findings (strict)' : `${reported} finding(s) above`}`);
  return { ok, report: lines.join('\n') };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-ledger-check-'));
  try {
    const pack = spawnSync('npm', ['pack', '--pack-destination', dir], { cwd: PACKAGE_ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    if (pack.status !== 0) throw new Error(`npm pack failed (exit ${String(pack.status)})`);
    const pkg = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
    const result = await checkPackedTarball(path.join(dir, `${pkg.name}-${pkg.version}.tgz`));
    console.log(result.report);
    if (!result.ok) process.exitCode = 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
