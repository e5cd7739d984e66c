/**
 * An append-only file of newline-terminated lines, validated once and then trusted incrementally.
 *
 * Both per-session files of the JSONL store (the event log and the durability records) are such
 * files; this class owns the bytes and the owner validates the lines. Every method runs while the
 * caller holds the session lock.
 * 1. `catchUp` `fstat`s the open descriptor: still linked and at least the validated size, then
 *    only the bytes past the validated size are read and each complete line goes to the owner's
 *    `accept`, which throws its own "corrupt" error for a bad line. A final fragment without
 *    `\n` is a torn write: ignored, and cut off before the next write. A file with no links left
 *    (another file was renamed over it, or it was deleted) is closed and the path opened again;
 *    a file shorter than the validated size is not trusted either: the owner's `reset` drops its
 *    state and the whole file is validated again from byte 0. A failed validation resets too, so
 *    a corrupt file fails every later call instead of being skipped. (A file *moved* to another
 *    name keeps its link, so a process that has it open keeps using it: never move a log in use.)
 * 2. `readRange` reads validated bytes back (one positional read); `isCurrent` tells a reader
 *    whether the validated state still describes the whole file, without the lock.
 * 3. `appendSync` cuts a torn tail, writes complete lines at the validated size with one
 *    positional write that is durable when it returns (and, on the first write through a
 *    descriptor, fsyncs the directory: the file's creator may have died before syncing its name),
 *    and only then advances the validated size.
 *
 * Read-only (`{ readOnly: true }`, for `agent-ledger verify` and a read-only store): the file is
 * opened `O_RDONLY`, never created, truncated or written; a torn tail is ignored as above and left
 * where it is, and `appendSync` refuses. The validated state then covers exactly the complete
 * lines, and {@link LineFile.size} past {@link LineFile.validSize} is the torn tail.
 *
 * Durable writes: the descriptor is opened with `O_DSYNC`, so a write returns once its bytes and
 * the file size needed to read them are on stable storage (what `fdatasync` guarantees; the file's
 * timestamps may lag, and nothing reads them). That is one system call per commit instead of a
 * write and an `fsync`. Where the platform has no `O_DSYNC` (Windows), each write is followed by
 * an `fsync`.
 *
 * The write and its flush are synchronous system calls: handing the flush to the libuv pool costs a
 * thread hand-off and a wake-up per commit (a write+flush loop runs markedly slower that way, see
 * docs/performance-history.md), while group commit already amortizes the flush across concurrent
 * appends. Reads of up to 64 KiB (a few new lines, a small page) are blocking `pread`s too, for the
 * same reason; larger catch-up scans and page reads run on the pool. A failed write or fsync leaves
 * the validated size where it was: the next catch-up reads back whatever did reach the file.
 */
import path from 'node:path';
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, openSync, read, readSync, writeSync } from 'node:fs';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import { syncDirectorySync } from './directory-sync.js';

/**
 * `O_DSYNC` where the platform has it (Linux, macOS), else 0 and an explicit `fsync` per write.
 * See the module header.
 */
const SYNC_WRITES: number = (constants as { O_DSYNC?: number }).O_DSYNC ?? 0;

/** Bytes read per step while validating a tail. */
const SCAN_CHUNK_BYTES = 1024 * 1024;
/**
 * Reads up to this size are made with a blocking `pread`: from the page cache that takes a few
 * microseconds, while a hand-off to the libuv thread pool and back costs tens (it doubled the
 * cost of a durable step, whose catch-up reads back one small record). Larger reads (a first
 * validation, big pages) go to the pool so the event loop keeps running.
 */
const SYNC_READ_MAX_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

/** What the owner of a {@link LineFile} decides. */
export interface LineOwner {
  /** Validates the complete line starting at byte `offset` (without its `\n`) and takes it in; throws when corrupt. */
  accept(line: Buffer, offset: number): void;
  /** Forgets everything taken in: the file is validated again from byte 0. */
  reset(): void;
  /** The owner's "corrupt" error (a file that changed under the validated bytes). */
  corrupt(message: string, details: Record<string, unknown>): Error;
  /**
   * Optional: called once when a descriptor was just opened on a non-empty file and nothing is
   * validated yet. Returns how many leading bytes (whole lines) the owner already trusts, having
   * restored its own state for them (see `validated-state.ts`), or 0 to validate the whole file.
   */
  restore?(file: LineFile, size: number): number;
}

function errorCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}

function readFailed(message: string, cause: unknown): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_READ_FAILED', message, { cause });
}

function readAt(fd: number, buffer: Buffer, offset: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    read(fd, buffer, offset, buffer.length - offset, position, (error, bytesRead) => {
      if (error) reject(error);
      else resolve(bytesRead);
    });
  });
}

/** One session file of complete, validated lines (see the module header). */
export class LineFile {
  #fd: number | undefined;
  #ino = -1n;
  #dev = -1n;
  /** Bytes of complete, validated lines. */
  #validSize = 0;
  /** File size at the last look: more than `#validSize` means a torn tail awaits repair. */
  #fileSize = 0;
  /** Set until the first write through the open descriptor has fsynced the file's directory. */
  #directoryUnsynced = false;

  constructor(
    readonly path: string,
    private readonly owner: LineOwner,
    readonly options: { readOnly?: boolean } = {},
  ) {}

  /** Bytes of complete lines validated so far. */
  get validSize(): number {
    return this.#validSize;
  }

  /** File size at the last look: past {@link validSize} lies a torn tail (a last line without `\n`). */
  get size(): number {
    return this.#fileSize;
  }

  /** True when this object has an open descriptor (the file existed at the last look). */
  get isOpen(): boolean {
    return this.#fd !== undefined;
  }

  /** `dev` and `ino` of the open file (`-1` when none), as decimal strings. */
  get fileId(): { dev: string; ino: string } {
    return { dev: String(this.#dev), ino: String(this.#ino) };
  }

  /** `ino:size` of the validated file, or `none`: what a change watcher compares a `stat` with. */
  get identity(): string {
    return this.#fd === undefined ? 'none' : `${this.#ino}:${this.#validSize}`;
  }

  #forget(): void {
    this.#validSize = 0;
    this.#fileSize = 0;
    this.owner.reset();
  }

  /** Drops the validated state and the descriptor. */
  close(): void {
    this.#forget();
    if (this.#fd !== undefined) {
      const fd = this.#fd;
      this.#fd = undefined;
      this.#ino = -1n;
      this.#dev = -1n;
      closeSync(fd);
    }
  }

  #adopt(fd: number): number {
    const stats = fstatSync(fd, { bigint: true });
    this.#fd = fd;
    this.#ino = stats.ino;
    this.#dev = stats.dev;
    // Whoever created this file may have died between its first write and its directory fsync, so
    // the name may not be durable yet: the first write through this descriptor fsyncs the
    // directory too (once per open file; later writes skip it).
    this.#directoryUnsynced = true;
    return Number(stats.size);
  }

  /**
   * Brings the validated state up to date with the file (see the module header). Returns a
   * promise only when there are new bytes to read; `undefined` means it is already current.
   */
  catchUp(): Promise<void> | undefined {
    let size: number | undefined;
    try {
      if (this.#fd !== undefined) {
        // The open descriptor answers without a path lookup. A file renamed over this one or
        // deleted has no links left: then the path is opened again, whatever it now names.
        const stats = fstatSync(this.#fd);
        if (stats.nlink > 0) {
          size = stats.size;
          if (size < this.#validSize) this.#forget();
        } else {
          this.close();
        }
      }
      if (size === undefined) {
        let fd: number;
        try {
          fd = openSync(this.path, this.options.readOnly === true ? constants.O_RDONLY : constants.O_RDWR | SYNC_WRITES);
        } catch (error) {
          if (errorCode(error) === 'ENOENT') return undefined;
          throw error;
        }
        size = this.#adopt(fd);
        if (size > 0 && this.#validSize === 0 && this.owner.restore !== undefined) {
          const trusted = this.owner.restore(this, size);
          if (trusted > 0 && trusted <= size) this.#validSize = trusted;
          else if (trusted !== 0) this.#forget();
        }
      }
    } catch (error) {
      throw readFailed(`cannot open ${this.path}`, error);
    }
    if (size <= this.#validSize) {
      this.#fileSize = size;
      return undefined;
    }
    return this.#scan(size).then(
      () => {
        this.#fileSize = size;
      },
      (error: unknown) => {
        // All or nothing: the next call validates the whole file again (and fails again).
        this.#forget();
        throw error;
      },
    );
  }

  async #scan(size: number): Promise<void> {
    // SAFETY: catchUp only scans after it opened the descriptor.
    const fd = this.#fd as number;
    let position = this.#validSize;
    let carry: Buffer | undefined;
    while (position < size) {
      const chunk = Buffer.allocUnsafe(Math.min(SCAN_CHUNK_BYTES, size - position));
      await this.#readFully(fd, chunk, position);
      position += chunk.length;
      const data = carry === undefined ? chunk : Buffer.concat([carry, chunk]);
      let start = 0;
      for (let newline = data.indexOf(NEWLINE); newline !== -1; newline = data.indexOf(NEWLINE, start)) {
        this.owner.accept(data.subarray(start, newline), this.#validSize);
        this.#validSize += newline - start + 1;
        start = newline + 1;
      }
      carry = start === data.length ? undefined : Buffer.from(data.subarray(start));
    }
  }

  /**
   * Fills `buffer` from `position` (small buffers synchronously, see {@link SYNC_READ_MAX_BYTES});
   * a short file is a concurrent truncation, reported as corrupt.
   */
  async #readFully(fd: number, buffer: Buffer, position: number): Promise<void> {
    const blocking = buffer.length <= SYNC_READ_MAX_BYTES;
    let filled = 0;
    while (filled < buffer.length) {
      let n: number;
      try {
        n = blocking
          ? readSync(fd, buffer, filled, buffer.length - filled, position + filled)
          : await readAt(fd, buffer, filled, position + filled);
      } catch (error) {
        throw readFailed(`cannot read ${this.path}`, error);
      }
      if (n === 0) throw this.owner.corrupt(`${this.path} shrank while being read`, { path: this.path, offset: position + filled });
      filled += n;
    }
  }

  /** The validated bytes `from..to` (empty when the file is not open). */
  async readRange(from: number, to: number): Promise<Buffer> {
    const bytes = Buffer.allocUnsafe(Math.max(0, to - from));
    if (bytes.length > 0 && this.#fd !== undefined) await this.#readFully(this.#fd, bytes, from);
    return bytes;
  }

  /**
   * The validated bytes `from..to` read with a blocking `pread`, or `undefined` when the range is
   * larger than a blocking read may be (then use {@link readRange}).
   */
  readRangeSync(from: number, to: number): Buffer | undefined {
    const length = Math.max(0, to - from);
    if (length > SYNC_READ_MAX_BYTES) return undefined;
    const bytes = Buffer.allocUnsafe(length);
    const fd = this.#fd;
    let filled = 0;
    while (fd !== undefined && filled < length) {
      let n: number;
      try {
        n = readSync(fd, bytes, filled, length - filled, from + filled);
      } catch (error) {
        throw readFailed(`cannot read ${this.path}`, error);
      }
      if (n === 0) throw this.owner.corrupt(`${this.path} shrank while being read`, { path: this.path, offset: from + filled });
      filled += n;
    }
    return bytes;
  }

  /**
   * Bytes `from..to` of the open file with blocking reads, whatever the size, or `undefined` when
   * no file is open or it is shorter than `to` (for the validated-state check and save).
   */
  readBytesSync(from: number, to: number): Buffer | undefined {
    const fd = this.#fd;
    if (fd === undefined || to < from) return undefined;
    const bytes = Buffer.allocUnsafe(to - from);
    let filled = 0;
    while (filled < bytes.length) {
      const n = readSync(fd, bytes, filled, bytes.length - filled, from + filled);
      if (n === 0) return undefined;
      filled += n;
    }
    return bytes;
  }

  /**
   * True when the file is exactly what was validated: open, still linked, and as long as the
   * validated lines (no new line, no torn tail, no truncation). Validated bytes never change (the
   * file is append-only), so a reader may then serve them without the session lock: a write that
   * completed before this check made the file longer. Any doubt (an error) answers false.
   */
  isCurrent(): boolean {
    if (this.#fd === undefined || this.#fileSize !== this.#validSize) return false;
    try {
      const stats = fstatSync(this.#fd);
      return stats.nlink > 0 && stats.size === this.#validSize;
    } catch {
      return false;
    }
  }

  /**
   * Cuts a torn tail, writes `lines` (complete, newline-terminated) at the validated size, fsyncs,
   * then calls `durable(position)` and advances the validated size over them. Throws
   * `DURABLE_EVENT_WRITE_FAILED`; bytes may have reached the file anyway (the next catch-up sees them).
   */
  appendSync(lines: Buffer, durable: (position: number) => void): void {
    const position = this.#validSize;
    try {
      if (this.options.readOnly === true) throw new Error(`${this.path} was opened read-only`);
      if (this.#fd === undefined) {
        const created = this.#adopt(openSync(this.path, constants.O_RDWR | constants.O_CREAT | SYNC_WRITES, 0o600));
        // catchUp saw no file and we hold the lock: anything already there came from a writer
        // that ignores the lock. Never cut it off; make the next call validate it instead.
        if (created !== 0) throw new Error(`${this.path} appeared outside the session lock`);
        this.#forget();
      }
      // SAFETY: opened just above or by catchUp.
      const fd = this.#fd as number;
      if (this.#fileSize !== position) {
        ftruncateSync(fd, position);
        this.#fileSize = position;
      }
      let written = 0;
      while (written < lines.length) {
        written += writeSync(fd, lines, written, lines.length - written, position + written);
      }
      this.#fileSize = position + lines.length;
      // With O_DSYNC the write above was already durable when it returned.
      if (SYNC_WRITES === 0) fsyncSync(fd);
      // The file's directory entry must be durable too, or power loss could lose the whole file.
      if (this.#directoryUnsynced) {
        syncDirectorySync(path.dirname(this.path));
        this.#directoryUnsynced = false;
      }
    } catch (error) {
      throw new DurableEventStoreError(
        'DURABLE_EVENT_WRITE_FAILED',
        `writing to ${this.path} failed; the data may or may not be in the file`,
        { cause: error },
      );
    }
    durable(position);
    this.#validSize = position + lines.length;
  }
}
