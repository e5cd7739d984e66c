/**
 * Session-scoped advisory lock on the `.jsonl.lock` sidecar.
 *
 * 1. The native addon (`fs-native-extensions`) is imported lazily, on the first store
 *    operation, so importing this package never needs it (it is an optional peer dependency).
 *    If it cannot load, every operation fails closed with `DURABLE_EVENT_LOCK_FAILED`; when it
 *    is not installed the message says which package to install (`details.missingPackage`).
 * 2. The lock is exclusive and belongs to an open descriptor of the sidecar (an open-file-
 *    description lock on Linux, `flock` on macOS, `LockFileEx` on Windows): the kernel drops it
 *    when the process dies, while a paused but live holder keeps it. The sidecar's existence
 *    means nothing; only the lock on an open descriptor does.
 * 3. `acquire` makes one non-blocking attempt, then polls with a growing, jittered backoff until
 *    the monotonic deadline; aborting its signal stops the polling at once. A deadline of "now"
 *    is exactly one attempt.
 */
import { closeSync, constants, openSync } from 'node:fs';
import { abortReason } from '../../../core/abort.js';
import { DurableEventStoreError, type DurableErrorDetails } from '../../../protocol/errors.js';

/** The part of `fs-native-extensions` this store uses. */
export interface LockAddon {
  tryLock(fd: number): boolean;
  unlock(fd: number): void;
}

/** First pause between two lock attempts. */
const FIRST_POLL_DELAY_MS = 1;
/** Longest pause between two lock attempts. */
const MAX_POLL_DELAY_MS = 25;
/** Name of the native lock package, kept in a variable so bundlers and type checkers leave it alone. */
const LOCK_ADDON_PACKAGE = 'fs-native-extensions';

let addon: Promise<LockAddon> | undefined;

function lockFailed(message: string, cause?: unknown, details?: DurableErrorDetails): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_LOCK_FAILED', message, {
    ...(cause === undefined ? {} : { cause }),
    ...(details === undefined ? {} : { details }),
  });
}

function isLockAddon(value: unknown): value is LockAddon {
  const v = value as Partial<LockAddon> | null;
  return typeof v === 'object' && v !== null && typeof v.tryLock === 'function' && typeof v.unlock === 'function';
}

async function importAddon(): Promise<LockAddon> {
  let loaded: unknown;
  try {
    loaded = await import(LOCK_ADDON_PACKAGE);
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    const missing = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
    throw lockFailed(
      missing
        ? `JsonlDurableEventStore needs the optional peer dependency ${LOCK_ADDON_PACKAGE} (its advisory file lock), which is not installed: run \`npm install ${LOCK_ADDON_PACKAGE}\``
        : `the native advisory lock addon (${LOCK_ADDON_PACKAGE}) could not load`,
      error,
      { missingPackage: LOCK_ADDON_PACKAGE },
    );
  }
  const candidate = (loaded as { default?: unknown }).default ?? loaded;
  if (!isLockAddon(candidate)) {
    throw lockFailed(`${LOCK_ADDON_PACKAGE} does not provide tryLock/unlock on this platform`, undefined, {
      missingPackage: LOCK_ADDON_PACKAGE,
    });
  }
  return candidate;
}

let loadedAddon: LockAddon | undefined;

/** The addon if it has already loaded, without waiting (for the synchronous fast path). */
export function loadedLockAddon(): LockAddon | undefined {
  return loadedAddon;
}

/**
 * Loads the native lock addon once per process. A failed load is remembered: the store keeps
 * failing closed with `DURABLE_EVENT_LOCK_FAILED` instead of retrying on every call.
 */
export function loadLockAddon(): Promise<LockAddon> {
  addon ??= importAddon().then((lib) => {
    loadedAddon = lib;
    return lib;
  });
  return addon;
}

/** Builds the `DURABLE_EVENT_LOCK_TIMEOUT` error the store reports. */
export function lockTimeoutError(timeoutMs: number): DurableEventStoreError {
  return new DurableEventStoreError(
    'DURABLE_EVENT_LOCK_TIMEOUT',
    `the session file lock was not acquired within ${timeoutMs} ms`,
    { details: { lockTimeoutMs: timeoutMs } },
  );
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The advisory lock of one session, held through one open descriptor of its sidecar. */
export class SessionFileLock {
  #fd: number | undefined;
  #locked = false;

  /**
   * `create: false` (a read-only store) never creates the sidecar: while it does not exist no
   * writer holds the lock (a writer creates it before locking), and {@link tryLock} succeeds
   * without one.
   */
  constructor(
    readonly path: string,
    readonly options: { create?: boolean } = {},
  ) {}

  /** True while this object holds the lock. */
  get locked(): boolean {
    return this.#locked;
  }

  /** The sidecar's descriptor; `undefined` when it does not exist and may not be created. */
  #descriptor(): number | undefined {
    if (this.#fd === undefined) {
      const create = this.options.create ?? true;
      try {
        this.#fd = openSync(this.path, create ? constants.O_RDWR | constants.O_CREAT : constants.O_RDWR, 0o600);
      } catch (error) {
        if (!create && (error as { code?: unknown } | null)?.code === 'ENOENT') return undefined;
        throw lockFailed(`cannot open the lock sidecar ${this.path}`, error);
      }
    }
    return this.#fd;
  }

  /** One non-blocking attempt: true when the lock is now held (or there is no sidecar to lock, see the constructor). */
  tryLock(lib: LockAddon): boolean {
    const fd = this.#descriptor();
    if (fd === undefined) return true;
    let acquired: boolean;
    try {
      acquired = lib.tryLock(fd);
    } catch (error) {
      throw lockFailed(`advisory locking failed on ${this.path}`, error);
    }
    this.#locked = acquired;
    return acquired;
  }

  /**
   * Takes the lock before `deadlineMs` (a `performance.now()` value), polling with backoff.
   * Throws `DURABLE_EVENT_LOCK_TIMEOUT` at the deadline (reported as `timeoutMs`), the signal's
   * reason when aborted, `DURABLE_EVENT_LOCK_FAILED` when the platform refuses to lock.
   */
  async acquire(lib: LockAddon, deadlineMs: number, timeoutMs: number, signal: AbortSignal): Promise<void> {
    let delay = FIRST_POLL_DELAY_MS;
    for (;;) {
      if (signal.aborted) throw abortReason(signal);
      if (this.tryLock(lib)) return;
      const left = deadlineMs - performance.now();
      if (left <= 0) throw lockTimeoutError(timeoutMs);
      const jittered = delay / 2 + Math.random() * delay;
      await pause(Math.max(0, Math.min(left, jittered)), signal);
      delay = Math.min(MAX_POLL_DELAY_MS, delay * 2);
    }
  }

  /**
   * Drops the lock (no-op when not held). If the addon refuses, the descriptor is closed so the
   * kernel drops the lock anyway, and the error is returned for the caller to report.
   */
  unlock(lib: LockAddon): unknown {
    if (!this.#locked || this.#fd === undefined) return undefined;
    this.#locked = false;
    try {
      lib.unlock(this.#fd);
      return undefined;
    } catch (error) {
      try {
        this.close();
      } catch {
        // The unlock error is the one worth reporting.
      }
      return error;
    }
  }

  /** Closes the sidecar descriptor (the kernel drops any lock it still carries). */
  close(): void {
    if (this.#fd === undefined) return;
    const fd = this.#fd;
    this.#fd = undefined;
    this.#locked = false;
    closeSync(fd);
  }
}
