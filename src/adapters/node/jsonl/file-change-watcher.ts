/**
 * Hears changes to one file through `fs.watch` (inotify on Linux, kqueue/FSEvents on macOS,
 * ReadDirectoryChangesW on Windows), including writes by other processes.
 *
 * 1. When the file exists, the file itself is watched: every event calls `onChange`.
 * 2. When it does not exist yet, its directory is watched (created first, mode 0700, as the store
 *    would): an event naming the file (or naming nothing) calls `onChange` and, once the file
 *    exists, moves the watch onto it.
 * 3. On every file event the path's inode is compared with the watched one: a file replaced,
 *    moved or deleted (or a watcher error) re-arms, so the path is watched again, whatever it
 *    now names, and `onChange` runs.
 * If the platform refuses (no `fs.watch`, inotify limits reached), nothing is watched and
 * `watching` is false: callers then rely on in-process notices and their own polling.
 * An event only says "look again"; it carries no data, and bursts are the caller's to coalesce.
 */
import { existsSync, mkdirSync, statSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/** `dev:ino` of the file at `file`, or `undefined` when there is none. */
function fileId(file: string): string | undefined {
  try {
    const stats = statSync(file, { bigint: true, throwIfNoEntry: false });
    return stats === undefined ? undefined : `${stats.dev}:${stats.ino}`;
  } catch {
    return undefined;
  }
}

/** Watches one path for changes; see the module header. */
export class FileChangeWatcher {
  #watcher: FSWatcher | undefined;
  /** `dev:ino` of the watched file; `undefined` while the directory is watched. */
  #watchedId: string | undefined;
  #closed = false;
  readonly #directory: string;
  readonly #name: string;

  constructor(
    readonly path: string,
    private readonly onChange: () => void,
  ) {
    this.#directory = dirname(this.path);
    this.#name = basename(this.path);
    this.#arm();
  }

  /** True while an `fs.watch` handle is open. */
  get watching(): boolean {
    return this.#watcher !== undefined;
  }

  #arm(): void {
    const file = this.#watchFile();
    if (file !== undefined) {
      this.#watcher = file;
      return;
    }
    const directory = this.#watchDirectory();
    // The file may have appeared between the failed file watch and the directory watch.
    if (directory !== undefined && existsSync(this.path)) {
      const again = this.#watchFile();
      if (again !== undefined) {
        directory.close();
        this.#watcher = again;
        return;
      }
    }
    this.#watcher = directory;
  }

  #rearm(): void {
    if (this.#closed) return;
    this.#watcher?.close();
    this.#watcher = undefined;
    this.#watchedId = undefined;
    this.#arm();
  }

  #watchFile(): FSWatcher | undefined {
    const before = fileId(this.path);
    if (before === undefined) return undefined;
    let watcher: FSWatcher;
    try {
      watcher = watch(this.path, () => {
        // A file renamed over this one or deleted still has this inode open elsewhere, and Linux
        // then reports a `change` (link count), not a `rename`: compare the inode on every event.
        if (fileId(this.path) !== this.#watchedId) this.#rearm();
        this.onChange();
      });
    } catch {
      return undefined;
    }
    watcher.on('error', () => {
      this.#rearm();
      this.onChange();
    });
    // Replaced while the watch was being set up: which inode is watched is unknown, so give up
    // this attempt (the caller falls back to the directory, which moves back onto the file).
    if (fileId(this.path) !== before) {
      watcher.close();
      return undefined;
    }
    this.#watchedId = before;
    return watcher;
  }

  #watchDirectory(): FSWatcher | undefined {
    let watcher: FSWatcher;
    try {
      mkdirSync(this.#directory, { recursive: true, mode: 0o700 });
      watcher = watch(this.#directory, (_type, filename) => {
        if (filename !== null && filename.toString() !== this.#name) return;
        if (existsSync(this.path)) this.#rearm();
        this.onChange();
      });
    } catch {
      return undefined;
    }
    watcher.on('error', () => {
      this.#rearm();
      this.onChange();
    });
    return watcher;
  }

  /** Stops watching. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}
