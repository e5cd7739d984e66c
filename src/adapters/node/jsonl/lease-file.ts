/**
 * Execution lease state of one session, in `{name}.lease.json`.
 *
 * Only read and written while the session lock is held, so lease changes and fenced appends
 * serialize with each other across processes.
 * 1. `read` stats the file; when its identity (dev, ino, size, mtime, ctime, compared field by
 *    field) matches the last read, the cached state is reused, so a fenced append costs one
 *    `stat`. Otherwise it reads and strictly parses the file; anything malformed is
 *    `DURABLE_EVENT_CORRUPT_LOG`.
 * 2. `write` replaces the file atomically: write a private temp file (mode 0600), fsync it,
 *    rename it over the old one, fsync the directory. A crash leaves either the old or the new
 *    state, never a mix.
 *
 * 3. The file names the session it belongs to, and `read` refuses (`DURABLE_EVENT_CORRUPT_LOG`) a
 *    file recording another session: two session IDs whose file names coincide (case-insensitive
 *    filesystems fold `c2Vzc2lvbi1hYWE` and `c2Vzc2lvbi1HYWE` together) then fail closed instead of
 *    sharing a lease and its fences.
 *
 * Format: `{"version":2,"sessionId":..,"leaseId":..,"ownerId":..,"fencingToken":..,
 * "acquiredAtMs":..,"expiresAtMs":..,"released":..}`. Version 1 (without `sessionId`) is refused:
 * its owner cannot be checked.
 */
import { randomBytes } from 'node:crypto';
import { close, constants, fsync, open, readFileSync, rename, statSync, unlink, write, type BigIntStats } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseLeaseState, type LeaseState } from '../../../core/log-engine.js';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import type { SessionId } from '../../../protocol/ids.js';
import { syncDirectory } from './directory-sync.js';

/** Version tag of the lease file format. */
const LEASE_FILE_VERSION = 2;

const openAsync = promisify(open);
const writeAsync = promisify(write);
const fsyncAsync = promisify(fsync);
const closeAsync = promisify(close);
const renameAsync = promisify(rename);
const unlinkAsync = promisify(unlink);

/** What `read` compares to tell whether the file changed since it was parsed. */
interface FileIdentity {
  readonly dev: bigint;
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
}

function identity(stats: BigIntStats): FileIdentity {
  return { dev: stats.dev, ino: stats.ino, size: stats.size, mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs };
}

/** Compares the five fields one by one: a fenced append builds no string to compare. */
function sameIdentity(known: FileIdentity | undefined, stats: BigIntStats): boolean {
  return (
    known !== undefined &&
    known.ino === stats.ino &&
    known.size === stats.size &&
    known.mtimeNs === stats.mtimeNs &&
    known.ctimeNs === stats.ctimeNs &&
    known.dev === stats.dev
  );
}

/** Lease state file of one session. */
export class LeaseFile {
  #cachedIdentity: FileIdentity | undefined;
  #cached: LeaseState | null = null;

  constructor(
    readonly path: string,
    readonly sessionId: SessionId,
  ) {}

  /** The persisted state, or `null` when the session never had a lease. */
  read(): LeaseState | null {
    let stats: BigIntStats | undefined;
    try {
      stats = statSync(this.path, { bigint: true, throwIfNoEntry: false });
    } catch (error) {
      throw new DurableEventStoreError('DURABLE_EVENT_READ_FAILED', `cannot stat ${this.path}`, { cause: error });
    }
    if (stats === undefined) {
      this.#cachedIdentity = undefined;
      this.#cached = null;
      return null;
    }
    if (sameIdentity(this.#cachedIdentity, stats)) return this.#cached;
    const id = identity(stats);
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (error) {
      throw new DurableEventStoreError('DURABLE_EVENT_READ_FAILED', `cannot read ${this.path}`, { cause: error });
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', `${this.path} is not valid JSON`, { cause: error });
    }
    if ((value as { version?: unknown } | null)?.version !== LEASE_FILE_VERSION) {
      throw new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', `${this.path} has an unknown format version`);
    }
    if ((value as { sessionId?: unknown }).sessionId !== this.sessionId) {
      throw new DurableEventStoreError(
        'DURABLE_EVENT_CORRUPT_LOG',
        `${this.path} records the lease of another session (file names of two session IDs coincide, e.g. on a case-insensitive filesystem)`,
        { details: { path: this.path } },
      );
    }
    const state = parseLeaseState(value);
    this.#cachedIdentity = id;
    this.#cached = state;
    return state;
  }

  /** Atomically replaces the persisted state. Throws `DURABLE_EVENT_WRITE_FAILED` (outcome unknown once renamed). */
  async write(state: LeaseState): Promise<void> {
    const body = Buffer.from(`${JSON.stringify({ version: LEASE_FILE_VERSION, sessionId: this.sessionId, ...state })}\n`);
    const temp = `${this.path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    let renamed = false;
    try {
      const fd = await openAsync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      try {
        let written = 0;
        while (written < body.length) {
          written += (await writeAsync(fd, body, written, body.length - written, written)).bytesWritten;
        }
        await fsyncAsync(fd);
      } finally {
        await closeAsync(fd);
      }
      await renameAsync(temp, this.path);
      renamed = true;
      await syncDirectory(path.dirname(this.path));
    } catch (error) {
      if (!renamed) await unlinkAsync(temp).catch(() => undefined);
      this.#cachedIdentity = undefined;
      throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', `cannot write ${this.path}`, { cause: error });
    }
    // The next read re-stats and sees the new identity; caching the state now saves the parse.
    try {
      this.#cachedIdentity = identity(statSync(this.path, { bigint: true }));
      this.#cached = state;
    } catch {
      this.#cachedIdentity = undefined;
    }
  }
}
