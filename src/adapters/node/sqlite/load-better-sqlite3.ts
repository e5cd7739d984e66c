/**
 * Loads `better-sqlite3` on first use instead of at module load.
 *
 * better-sqlite3 is an optional peer dependency of the package: a user who only needs the JSONL
 * store never installs it (nor compiles its native addon), and `agent-ledger/advanced` still
 * imports. The first `SqliteDurableEventStore` constructed loads it synchronously (the store's
 * constructor is synchronous) through `createRequire`; when it is not installed, construction
 * fails with `DURABLE_EVENT_UNAVAILABLE`, a message naming the package to install and
 * `details.missingPackage`.
 */
import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';
import { DurableEventStoreError } from '../../../protocol/errors.js';

/** npm name of the optional peer dependency behind `SqliteDurableEventStore`. */
const BETTER_SQLITE3_PACKAGE = 'better-sqlite3';

/** The better-sqlite3 `Database` constructor. */
export type BetterSqlite3Constructor = typeof Database;

const requireFromHere = createRequire(import.meta.url);
let loaded: BetterSqlite3Constructor | undefined;

function isModuleNotFound(error: unknown, name: string): boolean {
  const { code, message } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; message?: unknown };
  return code === 'MODULE_NOT_FOUND' && typeof message === 'string' && message.includes(`'${name}'`);
}

/**
 * Returns the better-sqlite3 constructor, loading the package once per process.
 *
 * @throws DurableEventStoreError `DURABLE_EVENT_UNAVAILABLE` when the package is not installed
 *   or its native addon cannot load (the cause is kept).
 */
export function loadBetterSqlite3(): BetterSqlite3Constructor {
  if (loaded !== undefined) return loaded;
  let module: unknown;
  try {
    // The name is a variable so bundlers do not try to inline the native addon.
    module = requireFromHere(BETTER_SQLITE3_PACKAGE);
  } catch (error) {
    const message = isModuleNotFound(error, BETTER_SQLITE3_PACKAGE)
      ? `SqliteDurableEventStore needs the optional peer dependency ${BETTER_SQLITE3_PACKAGE}, which is not installed: run \`npm install ${BETTER_SQLITE3_PACKAGE}\``
      : `${BETTER_SQLITE3_PACKAGE} is installed but could not load (reinstall it for this Node version and platform)`;
    throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', message, {
      cause: error,
      details: { missingPackage: BETTER_SQLITE3_PACKAGE },
    });
  }
  const candidate = (module as { default?: unknown }).default ?? module;
  if (typeof candidate !== 'function') {
    throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `${BETTER_SQLITE3_PACKAGE} did not export a Database constructor`, {
      details: { missingPackage: BETTER_SQLITE3_PACKAGE },
    });
  }
  // SAFETY: checked to be a function above; better-sqlite3's CommonJS export is the constructor.
  loaded = candidate as BetterSqlite3Constructor;
  return loaded;
}
