/**
 * The README's code blocks, as the tests see them.
 *
 * A block a user would paste is preceded by a marker comment naming it and saying how it runs:
 *
 *     <!-- snippet name=quick-start run=node expect=3|reconcile_request_inputs -->
 *     ```ts
 *     ...
 *     ```
 *
 * - `run=node`: a TypeScript program; the packaging test compiles it with tsc (strict, in a
 *   project that installed the packed tarball) and runs the JavaScript with plain `node` in an
 *   empty directory. Each `expect` value (separated by `|`) must appear in its output.
 * - `run=client`: like `node`, against a Worker the test starts (`AGENT_LEDGER_URL`,
 *   `AGENT_LEDGER_TOKEN` in the environment).
 * - `run=compile`: a TypeScript program compiled like `node` snippets but not run, for code that
 *   needs a service the test does not start (a PostgreSQL server).
 * - `run=sh`: shell lines, run with bash in the repository (only commands safe to run in a test).
 * - `run=worker`: a Worker module, type-checked with the Workers types.
 *
 * A block that is a reference listing, not something to paste (an interface outline, a table of
 * shapes), is preceded by `<!-- reference -->`. test/package/readme.test.ts fails on any
 * `ts`/`js`/`sh` block that carries neither marker.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './harness.js';

/** How a snippet is exercised. */
export type SnippetRunner = 'node' | 'client' | 'compile' | 'sh' | 'worker';

/** One marked code block of the README. */
export interface ReadmeSnippet {
  name: string;
  runner: SnippetRunner;
  language: string;
  code: string;
  expectOutput: string[];
  /** 1-based line of the opening fence. */
  line: number;
}

/** A fenced code block with the marker comment right above it (if any). */
export interface ReadmeBlock {
  language: string;
  code: string;
  line: number;
  marker: string | undefined;
}

const RUNNERS: readonly SnippetRunner[] = ['node', 'client', 'compile', 'sh', 'worker'];

/** Every fenced block of `markdown` (default: the README). */
export function readmeBlocks(markdown: string = readFileSync(path.join(ROOT, 'README.md'), 'utf8')): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const open = /^```(\S*)\s*$/.exec(lines[index] ?? '');
    if (open === null) continue;
    const start = index;
    const body: string[] = [];
    index += 1;
    while (index < lines.length && lines[index] !== '```') body.push(lines[index++] ?? '');
    let above = start - 1;
    while (above >= 0 && (lines[above] ?? '').trim() === '') above -= 1;
    const markerMatch = /^<!--\s*(snippet\b[^>]*|reference)\s*-->$/.exec((lines[above] ?? '').trim());
    blocks.push({ language: open[1] ?? '', code: `${body.join('\n')}\n`, line: start + 1, marker: markerMatch?.[1] });
  }
  return blocks;
}

/** The README's snippets (blocks marked `<!-- snippet ... -->`). */
export function readmeSnippets(markdown?: string): ReadmeSnippet[] {
  const snippets: ReadmeSnippet[] = [];
  for (const block of readmeBlocks(markdown)) {
    if (block.marker === undefined || !block.marker.startsWith('snippet')) continue;
    const attributes = new Map<string, string>();
    for (const match of block.marker.matchAll(/(\w+)=("[^"]*"|\S+)/g)) {
      attributes.set(match[1] ?? '', (match[2] ?? '').replace(/^"(.*)"$/, '$1'));
    }
    const name = attributes.get('name');
    const runner = attributes.get('run') as SnippetRunner | undefined;
    if (name === undefined || !/^[a-z0-9-]+$/.test(name)) throw new Error(`README line ${block.line}: snippet needs name=<kebab-case>`);
    if (runner === undefined || !RUNNERS.includes(runner)) throw new Error(`README line ${block.line}: snippet ${name} needs run=${RUNNERS.join('|')}`);
    const expected = attributes.get('expect');
    snippets.push({
      name,
      runner,
      language: block.language,
      code: block.code,
      expectOutput: expected === undefined ? [] : expected.split('|'),
      line: block.line,
    });
  }
  return snippets;
}
