/**
 * The `package.json` that ships: the repository's own without the fields that only serve
 * development here (`scripts`: `prepare`, `start`, `test`...; `allowScripts`, npm's allowlist of
 * the dev tools' install scripts). A user's npm would otherwise see a `prepare` script in the
 * tarball and warn about it on every install, and `npm start` would point at files not shipped.
 *
 * `npm pack` and `npm publish` run `prepack` (build, then `strip`), tar the files, then
 * `postpack` (`restore`):
 *
 * - `strip` copies `package.json` to {@link BACKUP} and replaces it (write to a temporary file,
 *   then rename: a process reading it meanwhile sees one whole file or the other) with the
 *   published manifest. If a backup is already there, an earlier pack died between the two steps:
 *   it is restored first.
 * - `restore` moves the backup back over `package.json`.
 *
 * {@link repositoryManifest} reads the repository's manifest even while a pack holds it stripped.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT } from './package-entries.js';

/** Fields of the repository's `package.json` that are not published. */
export const UNPUBLISHED_FIELDS = ['scripts', 'allowScripts'] as const;

const MANIFEST = path.join(PACKAGE_ROOT, 'package.json');
/** Where `strip` keeps the repository's `package.json` until `restore` (git-ignored `.tmp/`). */
export const BACKUP = path.join(PACKAGE_ROOT, '.tmp', 'pack', 'package.json');

/** The published manifest of `manifest` (the repository's, parsed). */
export function publishedManifest(manifest: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...manifest };
  for (const field of UNPUBLISHED_FIELDS) delete out[field];
  return out;
}

/** The repository's `package.json`, parsed (its backup while a pack holds it stripped). */
export function repositoryManifest(): Record<string, unknown> {
  const file = existsSync(BACKUP) ? BACKUP : MANIFEST;
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

function writeAtomically(file: string, text: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

/** Replaces `package.json` with the published manifest, keeping the original in {@link BACKUP}. */
export function strip(): void {
  if (existsSync(BACKUP)) {
    console.warn(`publish-manifest: ${BACKUP} exists (an earlier pack did not finish): restoring it first`);
    restore();
  }
  const text = readFileSync(MANIFEST, 'utf8');
  mkdirSync(path.dirname(BACKUP), { recursive: true });
  writeAtomically(BACKUP, text);
  const published = publishedManifest(JSON.parse(text) as Record<string, unknown>);
  writeAtomically(MANIFEST, `${JSON.stringify(published, null, 2)}\n`);
}

/** Puts the repository's `package.json` back (nothing to do without a backup). */
export function restore(): void {
  if (existsSync(BACKUP)) renameSync(BACKUP, MANIFEST);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const command = process.argv[2];
  if (command === 'strip') strip();
  else if (command === 'restore') restore();
  else {
    console.error('usage: node --import tsx scripts/publish-manifest.ts strip|restore');
    process.exitCode = 2;
  }
}
