#!/usr/bin/env node
// `npm run bench`: run every benchmark file, one after another.
//
// A benchmark is a file `bench/<name>.bench.ts` (or `.bench.mjs`) that does its own timing and
// prints its own results. Each runs in a fresh `node --import tsx` process, in name order, with
// its output passed straight through; running them one at a time keeps them from competing for
// CPU. The runner exits non-zero if any benchmark fails, after running the rest.
//
// Usage: node scripts/bench.mjs [directory] [name-filter]
//   directory    where to look (default: bench/)
//   name-filter  run only files whose name contains this text
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { constants } from 'node:os';
import path from 'node:path';

const [dirArg, filter] = process.argv.slice(2);
const benchDir = path.resolve(dirArg ?? 'bench');
const BENCH_FILE = /\.bench\.(?:ts|mts|mjs|js)$/;

const files = existsSync(benchDir)
  ? readdirSync(benchDir, { withFileTypes: true })
      .filter((entry) => entry.isFile() && BENCH_FILE.test(entry.name))
      .map((entry) => entry.name)
      .filter((name) => filter === undefined || name.includes(filter))
      .sort()
  : [];

if (files.length === 0) {
  console.log('no benchmarks');
  process.exit(0);
}

/** Runs one benchmark file; resolves to its exit code (128 + n when killed by signal n). */
function run(file) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(benchDir, file)], {
      stdio: 'inherit',
    });
    child.on('error', (error) => {
      console.error(`could not start ${file}: ${error.message}`);
      resolve(1);
    });
    child.on('exit', (code, signal) => {
      resolve(code ?? 128 + (constants.signals[signal] ?? 1));
    });
  });
}

const failed = [];
for (const file of files) {
  console.log(`\n=== ${file} ===`);
  const code = await run(file);
  if (code !== 0) {
    console.error(`=== ${file} failed (exit code ${code}) ===`);
    failed.push(file);
  }
}

console.log(`\n${files.length - failed.length} of ${files.length} benchmarks passed`);
if (failed.length > 0) {
  console.error(`failed: ${failed.join(', ')}`);
  process.exit(1);
}
