/**
 * Process-wide change listeners of session files (the event log for `watch`, the durability
 * durability file for `watchDurability`), keyed by file path, hearing this process's commits and other
 * processes' writes alike.
 *
 * 1. In-process: a JSONL store object that committed calls {@link notifyCommitted} after the data
 *    is durable and the session lock is released; every listener of the file hears
 *    `{ sessionId, lastSequence }` of that commit.
 * 2. Other processes: while a file has at least one listener, a {@link FileChangeWatcher}
 *    (`fs.watch`) reports changes. A change schedules one refresh (a burst of events, and events
 *    arriving during a refresh, fold into one more): `stat` the path; when `ino:size` equals what
 *    this process last knew (its own commit, already notified), stop; otherwise read the head
 *    under the session lock (`readHead`, the store's own catch-up) and notify the head only when
 *    it is past the last sequence notified. Nothing polls unless a listener asked for
 *    `pollIntervalMs`, which triggers the same refresh on a timer.
 * 3. The last listener to leave closes the watcher and its timers.
 * Listeners run in their own microtasks, isolated: a throwing listener neither reaches the
 * committer nor stops the others. A notice is a hint that the head is at least `lastSequence`;
 * a head that cannot be read (lock timeout, corrupt file) is not pushed, and the next change
 * tries again.
 */
import { statSync } from 'node:fs';
import type { SessionId } from '../../../protocol/ids.js';
import { FileChangeWatcher } from './file-change-watcher.js';

/** What a listener hears: the session and the last sequence now durable in the watched file. */
interface FileNotice {
  sessionId: SessionId;
  lastSequence: number;
}

/** A listener of one watched file. */
type FileListener = (notice: FileNotice) => void;

/** Reads the file's committed head under the session lock (`null` when empty). */
type HeadReader = () => Promise<number | null>;

/** How a listener wants its file watched. */
interface FileWatchOptions {
  readHead: HeadReader;
  /** Also look for foreign changes every this many milliseconds (for filesystems without events). */
  pollIntervalMs?: number | undefined;
}

interface Entry {
  readonly path: string;
  readonly sessionId: SessionId;
  readonly listeners: Set<FileListener>;
  readHead: HeadReader;
  watcher: FileChangeWatcher | undefined;
  /** Highest sequence notified so far (0: none). */
  lastNotified: number;
  /** `ino:size` (or `none`) of the file as this process last knew it. */
  known: string;
  /** Counts in-process commits, so a refresh never overwrites what a newer commit reported. */
  commits: number;
  state: 'idle' | 'scheduled' | 'running';
  again: boolean;
}

const entries = new Map<string, Entry>();

function statIdentity(file: string): string {
  try {
    const stats = statSync(file, { bigint: true, throwIfNoEntry: false });
    return stats === undefined ? 'none' : `${stats.ino}:${stats.size}`;
  } catch {
    return 'unknown';
  }
}

function deliver(entry: Entry, notice: FileNotice): void {
  for (const listener of [...entry.listeners]) {
    queueMicrotask(() => {
      try {
        listener(notice);
      } catch {
        // A notice is a hint; a throwing listener must not take the process or the others down.
      }
    });
  }
}

async function refresh(entry: Entry): Promise<void> {
  const seen = statIdentity(entry.path);
  if (seen === entry.known) return;
  const commits = entry.commits;
  let head: number | null;
  try {
    head = await entry.readHead();
  } catch {
    // Not pushed; `known` stays stale, so the next change or poll tries again.
    return;
  }
  const current = head ?? 0;
  if (entry.commits !== commits) {
    // A commit of this process landed meanwhile and already updated `known` and `lastNotified`.
    if (current > entry.lastNotified) entry.lastNotified = current;
    else return;
  } else {
    entry.known = seen;
    if (current <= entry.lastNotified) {
      // A replaced or truncated file can move the head back; notices then count from there.
      entry.lastNotified = current;
      return;
    }
    entry.lastNotified = current;
  }
  deliver(entry, { sessionId: entry.sessionId, lastSequence: current });
}

async function run(entry: Entry): Promise<void> {
  entry.state = 'running';
  try {
    do {
      entry.again = false;
      if (entry.listeners.size === 0) return;
      await refresh(entry);
    } while (entry.again);
  } finally {
    entry.state = 'idle';
  }
}

function changed(entry: Entry): void {
  if (entry.state === 'running') entry.again = true;
  else if (entry.state === 'idle') {
    entry.state = 'scheduled';
    // One turn later, so a burst of events becomes one refresh.
    setImmediate(() => void run(entry));
  }
}

/**
 * Registers `listener` for the file at `file` (a session's log or durability file); returns the
 * unsubscribe function. The first listener of a file starts its watcher.
 */
export function addFileListener(
  file: string,
  sessionId: SessionId,
  listener: FileListener,
  options: FileWatchOptions,
): () => void {
  let entry = entries.get(file);
  if (entry === undefined) {
    const created: Entry = {
      path: file,
      sessionId,
      listeners: new Set(),
      readHead: options.readHead,
      watcher: undefined,
      lastNotified: 0,
      known: 'none',
      commits: 0,
      state: 'idle',
      again: false,
    };
    // Watch first, then look: a change between the two is heard rather than absorbed.
    created.watcher = new FileChangeWatcher(file, () => changed(created));
    created.known = statIdentity(file);
    entries.set(file, created);
    entry = created;
  }
  const target = entry;
  target.readHead = options.readHead;
  target.listeners.add(listener);
  const timer =
    options.pollIntervalMs === undefined ? undefined : setInterval(() => changed(target), options.pollIntervalMs);
  let active = true;
  return () => {
    if (!active) return;
    active = false;
    if (timer !== undefined) clearInterval(timer);
    target.listeners.delete(listener);
    if (target.listeners.size === 0 && entries.get(file) === target) {
      target.watcher?.close();
      entries.delete(file);
    }
  };
}

/**
 * Reports a durable in-process commit to `file`, after the session lock was released:
 * `identity` is the file's `ino:size` right after the commit. Every listener hears the notice.
 */
export function notifyCommitted(file: string, notice: FileNotice, identity: string): void {
  const entry = entries.get(file);
  if (entry === undefined) return;
  entry.commits++;
  entry.known = identity;
  if (notice.lastSequence > entry.lastNotified) entry.lastNotified = notice.lastSequence;
  deliver(entry, notice);
}

/** True when some listener of this process watches `file` (else {@link notifyCommitted} has nothing to do). */
export function isWatched(file: string): boolean {
  return entries.has(file);
}

/** Whether `file` has listeners and an open `fs.watch` handle. For tests and diagnostics. */
export function fileWatchState(file: string): { listeners: number; watching: boolean } {
  const entry = entries.get(file);
  return { listeners: entry?.listeners.size ?? 0, watching: entry?.watcher?.watching ?? false };
}
