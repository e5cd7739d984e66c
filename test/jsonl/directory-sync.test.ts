/**
 * Directory fsyncs: a new file's name survives power loss only once its directory is fsynced, and
 * a new directory's name only once its parent is. Counted by wrapping `fs.openSync` / `fs.fsyncSync`
 * (`syncBuiltinESMExports` makes the store's named imports see the wrappers) and recording which
 * directories were fsynced. Also: every write to a log is durable before the append returns (the
 * descriptor is `O_DSYNC`, or the write is followed by `fsync`).
 */
import fs, { mkdirSync, openSync, closeSync, statSync, writeSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { SessionId } from '../../src/protocol/ids.js';
import { tagDraft, tempRoot } from './helpers.js';

const { root, cleanup } = tempRoot();
afterAll(cleanup);

const realOpenSync = fs.openSync;
const realFsyncSync = fs.fsyncSync;
const realCloseSync = fs.closeSync;
const realWriteSync = fs.writeSync;

/** Records the directories fsynced (synchronously) while installed. */
function recordDirectorySyncs(): string[] {
  const directories = new Map<number, string>();
  const synced: string[] = [];
  fs.openSync = ((file: fs.PathLike, ...rest: unknown[]) => {
    // SAFETY: forwards the caller's arguments unchanged.
    const fd = (realOpenSync as (...args: unknown[]) => number)(file, ...rest);
    try {
      if (statSync(file).isDirectory()) directories.set(fd, path.resolve(String(file)));
    } catch {
      // not ours to judge
    }
    return fd;
  }) as typeof fs.openSync;
  fs.fsyncSync = ((fd: number) => {
    const directory = directories.get(fd);
    if (directory !== undefined) synced.push(directory);
    realFsyncSync(fd);
  }) as typeof fs.fsyncSync;
  fs.closeSync = ((fd: number) => {
    directories.delete(fd);
    realCloseSync(fd);
  }) as typeof fs.closeSync;
  syncBuiltinESMExports();
  return synced;
}

afterEach(() => {
  fs.openSync = realOpenSync;
  fs.fsyncSync = realFsyncSync;
  fs.closeSync = realCloseSync;
  fs.writeSync = realWriteSync;
  syncBuiltinESMExports();
});

/** For each write to a `.jsonl` file while installed: was it durable when the write (and the append) returned? */
function recordLogWrites(): Array<{ file: string; dsync: boolean; fsyncedAfter: boolean }> {
  const opened = new Map<number, { file: string; flags: number }>();
  const writes: Array<{ file: string; fd: number; dsync: boolean; fsyncedAfter: boolean }> = [];
  fs.openSync = ((file: fs.PathLike, flags?: unknown, ...rest: unknown[]) => {
    // SAFETY: forwards the caller's arguments unchanged.
    const fd = (realOpenSync as (...args: unknown[]) => number)(file, flags, ...rest);
    if (String(file).endsWith('.jsonl')) opened.set(fd, { file: String(file), flags: typeof flags === 'number' ? flags : 0 });
    return fd;
  }) as typeof fs.openSync;
  fs.writeSync = ((fd: number, ...rest: unknown[]) => {
    const log = opened.get(fd);
    if (log !== undefined) writes.push({ file: log.file, fd, dsync: (log.flags & fs.constants.O_DSYNC) !== 0, fsyncedAfter: false });
    // SAFETY: forwards the caller's arguments unchanged.
    return (realWriteSync as (...args: unknown[]) => number)(fd, ...rest);
  }) as typeof fs.writeSync;
  fs.fsyncSync = ((fd: number) => {
    for (const write of writes) if (write.fd === fd) write.fsyncedAfter = true;
    realFsyncSync(fd);
  }) as typeof fs.fsyncSync;
  syncBuiltinESMExports();
  return writes;
}

describe('directory fsync', () => {
  it('fsyncs the storage root after creating durable-events, and durable-events after creating a log', async () => {
    const storage = path.join(root, 'fresh', 'nested');
    mkdirSync(path.join(root, 'fresh'));
    const synced = recordDirectorySyncs();
    await new JsonlDurableEventStore(storage).append(SessionId('new-session'), [tagDraft('x')]);
    // nested/ and durable-events/ were created: their parents are fresh/ and nested/.
    expect(synced).toContain(path.join(root, 'fresh'));
    expect(synced).toContain(storage);
    expect(synced).toContain(path.join(storage, 'durable-events'));
  });

  it('fsyncs durable-events after the first write to a log whose creating writer died before writing', async () => {
    const storage = path.join(root, 'orphan');
    const store = new JsonlDurableEventStore(storage);
    const sessionId = SessionId('orphaned-log');
    await store.append(SessionId('other-session'), [tagDraft('setup')]);
    // A writer created the file, wrote a torn fragment and died (kill -9): no directory fsync happened.
    const fd = openSync(store.pathsOf(sessionId).log, 'wx', 0o600);
    writeSync(fd, '[{"schemaVersion":4,"torn');
    closeSync(fd);
    const synced = recordDirectorySyncs();
    await new JsonlDurableEventStore(storage).append(sessionId, [tagDraft('first')]);
    expect(synced).toContain(path.join(storage, 'durable-events'));
  });

  it('fsyncs a directory once per open log, not on every append', async () => {
    const storage = path.join(root, 'steady');
    const store = new JsonlDurableEventStore(storage);
    const sessionId = SessionId('steady-session');
    await store.append(sessionId, [tagDraft('first')]);
    const synced = recordDirectorySyncs();
    for (let i = 0; i < 5; i++) await store.append(sessionId, [tagDraft(`n${i}`)]);
    expect(synced).toEqual([]);
  });

  it('makes every log write durable before the append returns (O_DSYNC descriptor, or fsync after it)', async () => {
    const storage = path.join(root, 'durable-writes');
    const writes = recordLogWrites();
    const store = new JsonlDurableEventStore(storage);
    const sessionId = SessionId('durable-writes');
    await store.append(sessionId, [tagDraft('one')]);
    await store.append(sessionId, [tagDraft('two')], { expectedLastSequence: 1 as never });
    await new JsonlDurableEventStore(storage).append(sessionId, [tagDraft('three')]); // a new descriptor
    const logWrites = writes.filter((write) => write.file === store.pathsOf(sessionId).log);
    expect(logWrites).toHaveLength(3);
    for (const write of logWrites) expect(write.dsync || write.fsyncedAfter).toBe(true);
    // On Linux the descriptor carries O_DSYNC: one system call per commit.
    if (process.platform === 'linux') expect(logWrites.every((write) => write.dsync)).toBe(true);
  });
});
