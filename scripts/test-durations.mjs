#!/usr/bin/env node
// Writes test/durations.json, the durations test/sequencer.ts orders test files by, from a vitest
// JSON report of a whole run:
//   npx vitest run --reporter=json --outputFile=.tmp/report.json && node scripts/test-durations.mjs .tmp/report.json
// Files under one second are left out (the sequencer reads them as 0).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const reportPath = process.argv[2];
if (!reportPath) {
  console.error('usage: node scripts/test-durations.mjs <vitest-json-report>');
  process.exit(2);
}
const report = JSON.parse(readFileSync(reportPath, 'utf8'));
const durations = report.testResults
  // Paths from the repository root, whichever clone the report came from (no folder under test/ is named test).
  .map((file) => [file.name.slice(file.name.replaceAll(path.sep, '/').lastIndexOf('/test/') + 1), Math.round((file.endTime - file.startTime) / 1000)])
  .filter(([, seconds]) => seconds >= 1)
  .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
writeFileSync(path.join(root, 'test', 'durations.json'), `${JSON.stringify(Object.fromEntries(durations), null, 2)}\n`);
console.log(`test/durations.json: ${durations.length} files`);
