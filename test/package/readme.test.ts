/**
 * The README as a user reads it: every block a user would paste is marked and exercised, nothing
 * links outside the repository, and it opens with the two commands that set everything up.
 *
 * `run=node` and `run=client` snippets are compiled and run against the packed package by
 * test/package/package.test.ts; `run=sh` lines are checked here against what CI and the scripts
 * really do (running `npm ci` inside a test would reinstall the repository under its own feet).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './harness.js';
import { readmeBlocks, readmeSnippets } from './readme-snippets.js';
import { repositoryManifest } from '../../scripts/publish-manifest.js';

const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const CODE_LANGUAGES = new Set(['ts', 'typescript', 'js', 'javascript', 'mjs', 'sh', 'bash', 'shell', 'console']);

/** GitHub's anchor for a heading. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');
}

describe('README', () => {
  it('opens with npm ci && npm start and npm ci && npm test', () => {
    const opening = README.split('\n').slice(0, 12).join('\n');
    expect(opening).toContain('npm ci && npm start');
    expect(opening).toContain('npm ci && npm test');
  });

  it('marks every code block a user could paste as a snippet or a reference listing', () => {
    const unmarked = readmeBlocks(README)
      .filter((block) => CODE_LANGUAGES.has(block.language) && block.marker === undefined)
      .map((block) => `line ${block.line} (${block.language})`);
    expect(unmarked, 'precede each block with <!-- snippet name=... run=... --> or <!-- reference -->').toEqual([]);
    const names = readmeSnippets(README).map((snippet) => snippet.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('runs only commands that exist, as CI and the scripts run them (run=sh blocks)', () => {
    // The repository's manifest even while the packaging test's `npm pack` holds package.json stripped.
    const scripts = repositoryManifest()['scripts'] as Record<string, string>;
    const ci = readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8');
    const shell = readmeSnippets(README).filter((snippet) => snippet.runner === 'sh');
    expect(shell.length).toBeGreaterThan(0);
    for (const snippet of shell) {
      for (const rawLine of snippet.code.split('\n')) {
        const line = rawLine.replace(/\s+#.*$/, '').trim();
        if (line === '') continue;
        for (const command of line.split('&&').map((part) => part.trim())) {
          const script = /^npm (?:run )?(\S+)$/.exec(command)?.[1];
          if (command === 'npm ci') {
            expect(ci, 'CI installs with npm ci').toMatch(/\bnpm ci\b/);
            continue;
          }
          expect(script, `${snippet.name}: unexpected command "${command}"`).toBeDefined();
          expect(scripts[script as string], `npm script ${String(script)}`).toBeDefined();
        }
      }
    }
    expect(ci).toMatch(/npm ci && npm test/);
  });

  it('links only to files in the repository and to its own headings', () => {
    const headings = new Set([...README.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchor(match[1] ?? '')));
    const withoutCode = README.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
    const problems: string[] = [];
    for (const match of withoutCode.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1] ?? '';
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
        problems.push(`external link ${target}`);
        continue;
      }
      const [file, hash] = target.split('#');
      if (file === undefined || file === '') {
        if (hash !== undefined && !headings.has(hash)) problems.push(`no heading for #${hash}`);
        continue;
      }
      const resolved = path.resolve(ROOT, file);
      if (!resolved.startsWith(ROOT) || !existsSync(resolved)) problems.push(`missing file ${target}`);
    }
    for (const match of withoutCode.matchAll(/https?:\/\/[^\s)>\]]+/g)) {
      if (!/^https?:\/\/(127\.0\.0\.1|localhost)\b/.test(match[0])) problems.push(`external URL ${match[0]}`);
    }
    for (const match of README.matchAll(/\]\(\.\.\//g)) problems.push(`path outside the repository at ${String(match.index)}`);
    expect(problems).toEqual([]);
  });
});
