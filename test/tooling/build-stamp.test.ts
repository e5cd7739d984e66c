/**
 * scripts/build-stamp.ts on a small tree of real files: `dist/` counts as current only while every
 * build input is as the build recorded it. (The package test packs with it; test:deep compares a
 * fresh build with the repository's current `dist/`.)
 */
import { mkdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILD_INPUTS, buildInputsDigest, forgetBuild, isBuildCurrent, recordBuild } from '../../scripts/build-stamp.js';
import { scratchDir } from '../scratch-dir.js';

/** A package root with one file per build input and a built `dist/`. */
function tree(): string {
  const root = scratchDir('agent-ledger-build-stamp-');
  for (const input of BUILD_INPUTS) {
    const file = input === 'src' ? 'src/index.ts' : input;
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), `// ${file}\n`);
  }
  mkdirSync(path.join(root, 'src', 'nested'));
  writeFileSync(path.join(root, 'src', 'nested', 'deep.ts'), 'export const deep = 1;\n');
  mkdirSync(path.join(root, 'dist'));
  writeFileSync(path.join(root, 'dist', 'index.js'), 'export {};\n');
  return root;
}

describe('build stamp', () => {
  it('is stale without a record, current after one, stale again once any input changes', () => {
    const root = tree();
    expect(isBuildCurrent(root)).toBe(false);
    recordBuild(root, buildInputsDigest(root));
    expect(isBuildCurrent(root)).toBe(true);
    writeFileSync(path.join(root, 'src', 'nested', 'deep.ts'), 'export const deep = 2;\n');
    expect(isBuildCurrent(root)).toBe(false);
    recordBuild(root, buildInputsDigest(root));
    writeFileSync(path.join(root, 'package-lock.json'), '{}\n');
    expect(isBuildCurrent(root)).toBe(false);
  });

  it('sees a new or removed source file, and a missing dist/', () => {
    const root = tree();
    recordBuild(root, buildInputsDigest(root));
    writeFileSync(path.join(root, 'src', 'added.ts'), '');
    expect(isBuildCurrent(root)).toBe(false);
    unlinkSync(path.join(root, 'src', 'added.ts'));
    expect(isBuildCurrent(root)).toBe(true);
    unlinkSync(path.join(root, 'src', 'nested', 'deep.ts'));
    expect(isBuildCurrent(root)).toBe(false);
    recordBuild(root, buildInputsDigest(root));
    rmSync(path.join(root, 'dist'), { recursive: true });
    expect(isBuildCurrent(root)).toBe(false);
  });

  it('ignores files that are not build inputs, keeps one record per dist/ path, and forgets it', () => {
    const root = tree();
    const copy = tree();
    const digest = buildInputsDigest(root);
    expect(buildInputsDigest(copy)).toBe(digest); // same content, other place
    recordBuild(root, digest);
    writeFileSync(path.join(root, 'README.md'), 'docs change\n');
    expect(isBuildCurrent(root)).toBe(true);
    expect(isBuildCurrent(copy)).toBe(false);
    forgetBuild(root);
    expect(isBuildCurrent(root)).toBe(false);
  });
});
