#!/usr/bin/env node
// `npm run test:deep`: the heavier variants. Runs, with AGENT_LEDGER_DEEP=1, every test file that
// imports test/deep.ts (directly, as `../deep.js` or `./deep.js`), so its `sized(quick, deep)`
// values take the deep size, and every `*.deep.test.ts` file (which `npm test` leaves out, see
// vitest.config.ts). Extra arguments go to vitest.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function* testFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'fixtures') yield* testFiles(full);
    } else if (entry.name.endsWith('.test.ts')) yield full;
  }
}

const deepImport = /from\s+['"](?:\.\.?\/)+deep\.js['"]/;
const files = [...testFiles(path.join(root, 'test'))]
  .filter((file) => file.endsWith('.deep.test.ts') || deepImport.test(readFileSync(file, 'utf8')))
  .map((file) => path.relative(root, file))
  .sort();
if (files.length === 0) {
  console.error('test:deep: no test file imports test/deep.ts');
  process.exit(1);
}
console.log(`test:deep: ${files.length} files with deep variants\n  ${files.join('\n  ')}`);
const result = spawnSync(process.execPath, [path.join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...files, ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, AGENT_LEDGER_DEEP: '1' },
});
process.exit(result.status ?? 1);
