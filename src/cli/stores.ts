/**
 * Store URLs: one argument names a store.
 *
 * | Argument | Store |
 * |---|---|
 * | `jsonl:./data` | `JsonlDurableEventStore` rooted at `./data` |
 * | `sqlite:./ledger.db` | `SqliteDurableEventStore` on that file |
 * | `postgres://…` / `postgresql://…` | `PostgresDurableEventStore` (`?schema=` picks the schema) |
 * | `http://127.0.0.1:8787`, `https://host` | `HttpDurableEventStore`; the token comes from the environment variable named by `--token-env` (default `AGENT_LEDGER_TOKEN`) |
 *
 * Backends load lazily (a dynamic `import()` when a command opens a store), so `--help` and every
 * command that fails on its arguments never load better-sqlite3 or fs-native-extensions.
 */
import { existsSync, rmdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import type { DurabilityRecordStore } from '../core/durability/record-contract.js';
import type { DurableEventStore, DurableExecutionLeaseStore } from '../core/store.js';
import type { SessionId } from '../protocol/ids.js';
import type { WebSocketConstructorLike } from '../adapters/http/websocket-watch.js';
import { CliError } from './output.js';

/** The kinds of store a URL can name. */
type StoreKind = 'jsonl' | 'sqlite' | 'postgres' | 'http';

/** A parsed store argument. */
export interface StoreSpec {
  kind: StoreKind;
  /** Absolute directory (jsonl), file (sqlite), or URL (postgres, http). */
  location: string;
  /** The argument as given (for messages). */
  raw: string;
}

/** An opened store and how to release it. */
export interface OpenedStore {
  spec: StoreSpec;
  store: DurableEventStore & Partial<DurableExecutionLeaseStore> & Partial<DurabilityRecordStore>;
  close(): Promise<void>;
}

/** Default environment variable holding the bearer token of an HTTP store. */
const DEFAULT_TOKEN_ENV = 'AGENT_LEDGER_TOKEN';

/**
 * Parses a store argument.
 *
 * @throws CliError for anything that is not one of the documented forms
 */
export function parseStoreUrl(raw: string): StoreSpec {
  if (raw.startsWith('jsonl:')) {
    const rest = raw.slice('jsonl:'.length).replace(/^\/\/(?=\/)/, '');
    if (rest === '') throw new CliError(`store "${raw}": jsonl: needs a directory, e.g. jsonl:./data`);
    return { kind: 'jsonl', location: path.resolve(rest), raw };
  }
  if (raw.startsWith('sqlite:')) {
    const rest = raw.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (rest === '') throw new CliError(`store "${raw}": sqlite: needs a file, e.g. sqlite:./ledger.db`);
    return { kind: 'sqlite', location: path.resolve(rest), raw };
  }
  if (/^postgres(ql)?:\/\//.test(raw)) return { kind: 'postgres', location: raw, raw };
  if (/^https?:\/\//.test(raw)) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new CliError(`store "${raw}" is not a valid URL`);
    }
    if (url.username !== '' || url.password !== '') {
      throw new CliError(`store "${url.origin}": put the token in an environment variable (--token-env), not in the URL`);
    }
    return { kind: 'http', location: url.toString(), raw };
  }
  throw new CliError(
    `store "${raw}" is not recognised: use jsonl:<dir>, sqlite:<file>, postgres://..., http(s)://host`,
  );
}

/** Options of {@link openStore}. */
interface OpenStoreOptions {
  /** The store must already exist (read commands); a target of `copy` may be created. */
  mustExist: boolean;
  /** Environment variable with the HTTP bearer token. */
  tokenEnv?: string;
  /** Where that variable is read (default: `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * Opens the store a {@link StoreSpec} names, importing its backend only now.
 *
 * @throws CliError when the store does not exist (for `mustExist`), a token is missing, or the
 * backend is not available in this build
 */
export async function openStore(spec: StoreSpec, options: OpenStoreOptions): Promise<OpenedStore> {
  switch (spec.kind) {
    case 'jsonl': {
      if (options.mustExist && !existsSync(spec.location)) throw new CliError(`store ${spec.raw}: no such directory ${spec.location}`);
      if (existsSync(spec.location) && !statSync(spec.location).isDirectory()) {
        throw new CliError(`store ${spec.raw}: ${spec.location} is not a directory`);
      }
      const { JsonlDurableEventStore } = await import('../adapters/node/jsonl/jsonl-store.js');
      const store = new JsonlDurableEventStore(spec.location);
      return { spec, store, close: () => store.close() };
    }
    case 'sqlite': {
      if (options.mustExist && !existsSync(spec.location)) throw new CliError(`store ${spec.raw}: no such file ${spec.location}`);
      const { SqliteDurableEventStore } = await import('../adapters/node/sqlite/sqlite-store.js');
      const store = new SqliteDurableEventStore(spec.location);
      return { spec, store, close: async () => store.close() };
    }
    case 'postgres':
      return openPostgres(spec, options.mustExist);
    case 'http': {
      const variable = options.tokenEnv ?? DEFAULT_TOKEN_ENV;
      const token = (options.env ?? process.env)[variable];
      if (token === undefined || token === '') {
        throw new CliError(`store ${new URL(spec.location).origin}: set the bearer token in the environment variable ${variable}`);
      }
      const { HttpDurableEventStore } = await import('../adapters/http/http-store.js');
      const WebSocket = await loadWebSocket();
      const store = new HttpDurableEventStore({ baseUrl: spec.location, token, ...(WebSocket === undefined ? {} : { WebSocket }) });
      return { spec, store, close: async () => undefined };
    }
  }
}

/**
 * Whether the store exists before it is opened: the directory (jsonl) or file (sqlite). PostgreSQL
 * and HTTP stores are never created by opening them, so they count as existing.
 */
export function storeExists(spec: StoreSpec): boolean {
  return spec.kind === 'jsonl' || spec.kind === 'sqlite' ? existsSync(spec.location) : true;
}

/**
 * Removes what opening and writing `sessions` created in a local store that did not exist before
 * ({@link storeExists} was false): the SQLite file and its sidecars; for JSONL, the files of
 * `sessions`, then the directories if that left them empty (a file another process put there
 * meanwhile stays). The caller has checked that `sessions` hold no events.
 */
export async function removeCreatedStore(spec: StoreSpec, sessions: readonly SessionId[]): Promise<void> {
  if (spec.kind === 'sqlite') {
    for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${spec.location}${suffix}`, { force: true });
  } else if (spec.kind === 'jsonl') {
    const { EVENTS_DIRECTORY, sessionPaths } = await import('../adapters/node/jsonl/session-paths.js');
    for (const sessionId of sessions) {
      const { directory: _directory, ...files } = sessionPaths(spec.location, sessionId);
      for (const file of Object.values(files)) rmSync(file, { force: true });
    }
    for (const directory of [path.join(spec.location, EVENTS_DIRECTORY), spec.location]) {
      try {
        rmdirSync(directory);
      } catch {
        // Not empty, or never created.
      }
    }
  }
}

/** Name of the optional `ws` package (Node 20 has no global WebSocket). */
const WS_MODULE = 'ws';

/**
 * A WebSocket constructor for `tail -f` over HTTP: the global one (Node 22+), else the `ws` package
 * when it is installed; without either, subscriptions poll (`undefined`).
 */
async function loadWebSocket(): Promise<WebSocketConstructorLike | undefined> {
  const global = (globalThis as { WebSocket?: unknown }).WebSocket;
  // SAFETY: the platform WebSocket implements the structural constructor the client needs.
  if (typeof global === 'function') return global as WebSocketConstructorLike;
  try {
    const mod = (await import(WS_MODULE)) as { WebSocket?: unknown; default?: unknown };
    const ctor = mod.WebSocket ?? mod.default;
    // SAFETY: `ws` implements the WHATWG WebSocket constructor shape the client uses.
    return typeof ctor === 'function' ? (ctor as WebSocketConstructorLike) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Opens `postgres://…` with `PostgresDurableEventStore` (`agent-ledger/postgres`, which needs the
 * `pg` peer). A `schema` query parameter picks the PostgreSQL schema (default `agent_ledger`).
 * Read commands open without migrating (a database without the tables is an error); targets of
 * `copy` and `fork --to` apply the migrations.
 */
async function openPostgres(spec: StoreSpec, mustExist: boolean): Promise<OpenedStore> {
  let mod: typeof import('../postgres.js');
  try {
    mod = await import('../postgres.js');
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new CliError(`store ${redactUrl(spec.location)}: the PostgreSQL store could not load (is the pg package installed?): ${reason ?? ''}`);
  }
  const url = new URL(spec.location);
  const schema = url.searchParams.get('schema');
  url.searchParams.delete('schema');
  try {
    const store = await mod.PostgresDurableEventStore.open({
      connectionString: url.toString(),
      ...(schema === null || schema === '' ? {} : { schema }),
      migrate: !mustExist,
      poolSize: 2,
    });
    return { spec, store, close: () => store.close() };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new CliError(`store ${redactUrl(spec.location)}: ${message.split(url.password === '' ? '\u0000' : url.password).join('***')}`);
  }
}

/** A URL with its password replaced by `***` (for messages). */
function redactUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return text;
  }
}
