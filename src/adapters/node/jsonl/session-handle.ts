/**
 * What one store object keeps per session, and how it takes the session lock.
 *
 * A handle bundles the session's paths, its validated log cache ({@link SessionLog}), its
 * durability records cache ({@link SessionDurabilityFile}), its lock sidecar descriptor, its lease file
 * cache and its group-commit queue. `lockSession` takes the
 * process-wide queue first, then the OS advisory lock, so store objects of one process never
 * poll against each other and other processes are excluded by the kernel:
 * - `lockTimeoutMs: 0` makes exactly one attempt of each and fails with
 *   `DURABLE_EVENT_LOCK_TIMEOUT` if either is taken;
 * - otherwise it waits in the queue, then polls the OS lock, until `signal` aborts or the
 *   monotonic `deadlineMs` passes.
 * The returned release drops the OS lock, then hands the queue to the next waiter.
 * `underSessionLock` runs one store call's body between the two, trying the lock synchronously
 * first so that a call on a free session costs no timer and no signal.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { SessionId } from '../../../protocol/ids.js';
import { anySignal } from '../../../core/abort.js';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import type { StoreTestHooks } from '../../../core/store.js';
import type { CallState } from './bounded-call.js';
import { commitAppendGroup } from './append-commit.js';
import { syncDirectorySync } from './directory-sync.js';
import { loadedLockAddon, loadLockAddon, lockTimeoutError, SessionFileLock } from './file-lock.js';
import { GroupCommitQueue, type ReleaseLock } from './group-commit.js';
import { LeaseFile } from './lease-file.js';
import { SessionDurabilityFile } from './durability-file.js';
import { enterProcessQueue, tryEnterProcessQueue } from './process-queue.js';
import { SessionLog } from './session-file.js';
import { sessionPaths, type SessionPaths } from './session-paths.js';
import { isWatched, notifyCommitted } from './watch-registry.js';

/** Per-session state of one store object. */
export interface SessionHandle {
  id: SessionId;
  paths: SessionPaths;
  log: SessionLog;
  durability: SessionDurabilityFile;
  lock: SessionFileLock;
  lease: LeaseFile;
  appends: GroupCommitQueue;
  directoryReady: boolean;
  /** Store calls in flight that use this handle (queued appends are counted by `appends.busy`). */
  users: number;
}

/** Store settings a handle needs. */
interface SessionHandleConfig {
  lockTimeoutMs: number;
  operationTimeoutMs: number;
  clock: () => number;
  hooks: StoreTestHooks;
  /** Open the files read-only: never create, write, truncate or lock-create (see `JsonlDurableEventStoreOptions.readOnly`). */
  readOnly: boolean;
}

/** Builds the `DURABLE_EVENT_IO_TIMEOUT` error of a call that outlived `operationTimeoutMs`. */
export function ioTimeoutError(operationTimeoutMs: number): DurableEventStoreError {
  return new DurableEventStoreError(
    'DURABLE_EVENT_IO_TIMEOUT',
    `the store call exceeded operationTimeoutMs (${operationTimeoutMs} ms); a write may or may not have happened`,
    { details: { operationTimeoutMs } },
  );
}

/** A handle for `id` under the absolute `root`; opens nothing yet. */
export function createSessionHandle(root: string, id: SessionId, config: SessionHandleConfig): SessionHandle {
  const paths = sessionPaths(root, id);
  const handle: SessionHandle = {
    id,
    paths,
    log: new SessionLog(paths.log, id, { readOnly: config.readOnly }),
    durability: new SessionDurabilityFile(paths.durability, id, { readOnly: config.readOnly }),
    lock: new SessionFileLock(paths.lock, { create: !config.readOnly }),
    lease: new LeaseFile(paths.lease, id),
    // A read-only store creates no directory: a missing one is an empty store.
    directoryReady: config.readOnly,
    users: 0,
    appends: new GroupCommitQueue({
      lockTimeoutMs: config.lockTimeoutMs,
      operationTimeoutMs: config.operationTimeoutMs,
      ioTimeout: () => ioTimeoutError(config.operationTimeoutMs),
      tryLock: () => tryLockSession(handle),
      // Each queued append has its own lock deadline; the group waits until the last one leaves.
      lock: (signal) => lockSession(handle, config.lockTimeoutMs, signal, Number.POSITIVE_INFINITY),
      commit: (requests) => commitAppendGroup(handle, requests, config.clock, config.hooks),
      committed: (results) => {
        // Nobody in this process watches the log: no notice to build (the identity is a string of a bigint).
        if (!isWatched(paths.log)) return;
        const identity = handle.log.identity;
        for (const result of results) {
          notifyCommitted(paths.log, { sessionId: id, lastSequence: result.lastSequence }, identity);
        }
      },
    }),
  };
  return handle;
}

/** Closes the handle's descriptors and drops its caches (only while it is idle). */
export function closeSessionHandle(handle: SessionHandle): void {
  handle.log.close();
  handle.durability.close();
  handle.lock.close();
}

/**
 * The synchronous fast path of {@link lockSession}: one attempt at the queue and the OS lock.
 * `'busy'` when either is held; `'not-ready'` before the first `lockSession` of this handle
 * (the addon and the directory are set up there).
 */
function tryLockSession(handle: SessionHandle): ReleaseLock | 'busy' | 'not-ready' {
  const lib = loadedLockAddon();
  if (lib === undefined || !handle.directoryReady) return 'not-ready';
  const leaveQueue = tryEnterProcessQueue(handle.paths.log);
  if (leaveQueue === undefined) return 'busy';
  try {
    if (!handle.lock.tryLock(lib)) {
      leaveQueue();
      return 'busy';
    }
  } catch (error) {
    leaveQueue();
    throw error;
  }
  return () => {
    const error = handle.lock.unlock(lib);
    leaveQueue();
    return error;
  };
}

/** Fsyncs the parent of every directory from `created` (the first one made) down to `directory`. */
function syncCreatedDirectories(directory: string, created: string): void {
  const made: string[] = [];
  for (let current = directory; ; current = path.dirname(current)) {
    made.push(current);
    if (current === created || path.dirname(current) === current) break;
  }
  for (const child of made.reverse()) syncDirectorySync(path.dirname(child));
}

/** Takes the process queue, then the OS lock (see the module header). */
async function lockSession(
  handle: SessionHandle,
  lockTimeoutMs: number,
  signal: AbortSignal,
  deadlineMs: number,
): Promise<ReleaseLock> {
  const lib = await loadLockAddon();
  if (!handle.directoryReady) {
    try {
      const created = mkdirSync(handle.paths.directory, { recursive: true, mode: 0o700 });
      // A directory created here is durable only once its parent is fsynced (each level created).
      if (created !== undefined) syncCreatedDirectories(handle.paths.directory, created);
    } catch (error) {
      throw new DurableEventStoreError('DURABLE_EVENT_LOCK_FAILED', `cannot create ${handle.paths.directory}`, {
        cause: error,
      });
    }
    handle.directoryReady = true;
  }
  const immediate = lockTimeoutMs === 0;
  let leaveQueue = tryEnterProcessQueue(handle.paths.log);
  if (leaveQueue === undefined) {
    if (immediate) throw lockTimeoutError(0);
    leaveQueue = await enterProcessQueue(handle.paths.log, signal);
  }
  try {
    if (!handle.lock.tryLock(lib)) {
      if (immediate) throw lockTimeoutError(0);
      await handle.lock.acquire(lib, deadlineMs, lockTimeoutMs, signal);
    }
  } catch (error) {
    leaveQueue();
    throw error;
  }
  const queue = leaveQueue;
  return () => {
    const error = handle.lock.unlock(lib);
    queue();
    return error;
  };
}

/** The waiting path of {@link underSessionLock}: queue, then OS lock, within `lockTimeoutMs`. */
async function waitForLock(handle: SessionHandle, lockTimeoutMs: number, callSignal: AbortSignal): Promise<ReleaseLock> {
  const lockTimer = new AbortController();
  const timer =
    lockTimeoutMs > 0 ? setTimeout(() => lockTimer.abort(lockTimeoutError(lockTimeoutMs)), lockTimeoutMs) : undefined;
  try {
    return await lockSession(handle, lockTimeoutMs, anySignal([callSignal, lockTimer.signal]), performance.now() + lockTimeoutMs);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/**
 * Runs `body` under the session lock and releases it afterwards. `mutates` turns a failed unlock
 * after a successful body into `DURABLE_EVENT_WRITE_FAILED` (the outcome is then unknown).
 */
export async function underSessionLock<T>(
  handle: SessionHandle,
  lockTimeoutMs: number,
  call: CallState,
  mutates: boolean,
  body: () => Promise<T>,
): Promise<T> {
  // The common case: queue and OS lock free, taken at once without timers or signals.
  const attempt = tryLockSession(handle);
  if (attempt === 'busy' && lockTimeoutMs === 0) throw lockTimeoutError(0);
  const release = typeof attempt === 'function' ? attempt : await waitForLock(handle, lockTimeoutMs, call.signal);
  let result: T;
  try {
    result = await body();
  } catch (error) {
    release();
    throw error;
  }
  const unlockError = release();
  if (unlockError !== undefined && mutates) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_WRITE_FAILED',
      'unlocking the session failed after the write; the change may or may not be stored',
      { cause: unlockError },
    );
  }
  return result;
}
