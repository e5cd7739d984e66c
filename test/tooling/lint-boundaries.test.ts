/**
 * Proves the lint rules that guard the architecture can fail.
 *
 * Each case lints a snippet through ESLint's Node API with the project's real `eslint.config.js`,
 * under a virtual path (`lintText` + `filePath`: the file need not exist), and checks which rule
 * reports. The import-cycle case lints two fixture files on disk, because the cycle rule follows
 * imports through the file system.
 */
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { ESLint, type Linter } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RESTRICTED = '@typescript-eslint/no-restricted-imports';

let eslint: ESLint;

beforeAll(() => {
  eslint = new ESLint({ cwd: ROOT });
});

async function lint(relativePath: string, code: string): Promise<Linter.LintMessage[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, relativePath) });
  if (result === undefined) throw new Error(`ESLint returned no result for ${relativePath}`);
  return result.messages;
}

function rulesOf(messages: Linter.LintMessage[]): (string | null)[] {
  return messages.map((message) => message.ruleId);
}

const FORBIDDEN_IMPORTS = [
  "import { readFile } from 'node:fs/promises';",
  "import { randomUUID } from 'node:crypto';",
  "import fs from 'fs';",
  "import { join } from 'path';",
  "import { createHash } from 'crypto';",
  "import { readFile } from 'fs/promises';",
  "import { Hono } from 'hono';",
  "import type { Context } from 'hono';",
  "import { cors } from 'hono/cors';",
  "import { DurableObject } from 'cloudflare:workers';",
  "export * from 'node:events';",
  "import Database from 'better-sqlite3';",
];

describe('runtime-free layers (src/protocol, src/core)', () => {
  for (const layer of ['src/core', 'src/protocol']) {
    for (const statement of FORBIDDEN_IMPORTS) {
      it(`rejects \`${statement}\` in ${layer}`, async () => {
        const messages = await lint(`${layer}/__lint_probe__.ts`, `${statement}\n`);
        expect(rulesOf(messages)).toContain(RESTRICTED);
      });
    }
  }

  it('accepts runtime-neutral imports in src/core', async () => {
    const code = [
      "import { z } from 'zod';",
      "import { DurableEventStoreError } from '../protocol/errors.js';",
      "import type { SessionId } from '../protocol/ids.js';",
      'export const check = (id: SessionId): unknown => [z, DurableEventStoreError, id];',
      '',
    ].join('\n');
    const messages = await lint('src/core/__lint_probe__.ts', code);
    expect(messages).toEqual([]);
  });

  it('does not mistake look-alike package names for Node builtins', async () => {
    const code = "import { join } from 'pathe';\nimport { ok } from 'fsx';\nexport const used = [join, ok];\n";
    const messages = await lint('src/core/__lint_probe__.ts', code);
    expect(rulesOf(messages)).not.toContain(RESTRICTED);
  });

  it('allows Node imports outside the runtime-free layers', async () => {
    const code = "import { readFile } from 'node:fs/promises';\nexport const read = readFile;\n";
    expect(await lint('src/adapters/node/__lint_probe__.ts', code)).toEqual([]);
    expect(await lint('worker/__lint_probe__.ts', "import { Hono } from 'hono';\nexport const app = new Hono();\n")).toEqual([]);
  });

  // Small modules of the layers above: importing the Worker entry would have the cycle rule parse
  // the whole source tree (about 5 CPU-seconds) for a verdict the import path alone decides.
  for (const [layer, statement] of [
    ['src/adapters', "import { PROBLEM_CONTENT_TYPE as used } from '../adapters/http/problem.js';"],
    ['src/edge', "import { isPast as used } from '../edge/waiters.js';"],
  ] as const) {
    it(`rejects src/core importing a layer above it (${layer})`, async () => {
      const messages = await lint('src/core/__lint_probe__.ts', `${statement}\nexport { used };\n`);
      expect(rulesOf(messages)).toContain('import-x/no-restricted-paths');
    });
  }
});

describe('code rules', () => {
  it('rejects explicit any', async () => {
    const messages = await lint('src/core/__lint_probe__.ts', 'export const value: any = 1;\n');
    expect(rulesOf(messages)).toContain('@typescript-eslint/no-explicit-any');
  });

  it('rejects a value import that is only used as a type', async () => {
    const code = "import { DurableEventStoreError } from '../protocol/errors.js';\nexport type E = DurableEventStoreError;\n";
    const messages = await lint('src/core/__lint_probe__.ts', code);
    expect(rulesOf(messages)).toContain('@typescript-eslint/consistent-type-imports');
  });

  it('rejects a runtime import cycle', async () => {
    const cycleEslint = new ESLint({ cwd: ROOT, ignore: false });
    const results = await cycleEslint.lintFiles(['test/fixtures/lint/cycle/cycle-a.ts']);
    const messages = results.flatMap((result) => result.messages);
    expect(rulesOf(messages)).toContain('import-x/no-cycle');
  });
});
