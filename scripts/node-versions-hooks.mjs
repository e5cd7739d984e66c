// Preloaded (`NODE_OPTIONS=--import`) by scripts/test-node-versions.mjs into every Node process of
// a run on another Node version: loads better-sqlite3 from a copy built for that Node.
//
// The repository's node_modules/better-sqlite3 holds an addon built for the Node that ran `npm ci`,
// which another Node refuses to load (NODE_MODULE_VERSION differs). The script builds a second copy
// of the same version for the other Node into `AGENT_LEDGER_BETTER_SQLITE3_DIR`; this hook rewrites
// every resolution that lands inside the repository's copy (a bare `better-sqlite3` from src through
// createRequire, or the absolute path vitest uses for an external) to the same file of that copy.
// `module.registerHooks` runs in-thread and covers both require and import.
import { registerHooks } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const target = process.env['AGENT_LEDGER_BETTER_SQLITE3_DIR'];
if (target !== undefined && target !== '') {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const from = `${pathToFileURL(path.join(root, 'node_modules', 'better-sqlite3')).href}/`;
  const to = `${pathToFileURL(target).href}/`;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const result = nextResolve(specifier, context);
      return result.url.startsWith(from) ? { ...result, url: to + result.url.slice(from.length) } : result;
    },
  });
}
