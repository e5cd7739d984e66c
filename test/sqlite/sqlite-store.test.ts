/**
 * SqliteDurableEventStore beyond the shared contract: its durability settings, integrity checks
 * on read, lock timeouts between connections, closing, and `watch` across connections.
 */
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import type { DurableAppendNotice } from '../../src/core/store.js';
import { SessionId } from '../../src/protocol/ids.js';
import { tempDir } from './helpers.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()?.();
});

function newFile(): string {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  return tmp.file('ledger.db');
}

function open(file: string, options: ConstructorParameters<typeof SqliteDurableEventStore>[1] = {}): SqliteDurableEventStore {
  const store = new SqliteDurableEventStore(file, options);
  cleanups.push(() => store.close());
  return store;
}

const created = [{ type: 'session_created' as const, data: {} }];

describe('SqliteDurableEventStore', () => {
  it('opens the file in WAL mode with synchronous=FULL, owner-only', () => {
    const file = newFile();
    open(file);
    const raw = new Database(file, { readonly: true });
    cleanups.push(() => raw.close());
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('reports synchronous=FULL on its own connection', () => {
    const file = newFile();
    const store = open(file);
    // synchronous is per connection: read it through the store's own driver.
    expect(store.eventLog.driver.query<{ synchronous: number }>('PRAGMA synchronous')).toEqual([{ synchronous: 2 }]);
  });

  it('fails closed on a tampered row', async () => {
    const file = newFile();
    const store = open(file);
    const sessionId = SessionId('tampered');
    await store.append(sessionId, [...created, ...created]);
    const raw = new Database(file);
    cleanups.push(() => raw.close());
    raw.prepare("UPDATE events SET body = json_set(body, '$.sequence', 7) WHERE sequence = 2").run();
    await expect(store.read(sessionId)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
    raw.prepare("UPDATE events SET body = 'not json' WHERE sequence = 2").run();
    await expect(store.read(sessionId)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
  });

  it('fails closed on a sequence gap', async () => {
    const file = newFile();
    const store = open(file);
    const sessionId = SessionId('gap');
    await store.append(sessionId, [...created, ...created, ...created]);
    const raw = new Database(file);
    cleanups.push(() => raw.close());
    raw.prepare('DELETE FROM events WHERE sequence = 2').run();
    await expect(store.read(sessionId)).rejects.toMatchObject({ code: 'DURABLE_EVENT_CORRUPT_LOG' });
  });

  it('fails closed on malformed lease state', async () => {
    const file = newFile();
    const store = open(file);
    const raw = new Database(file);
    cleanups.push(() => raw.close());
    raw.prepare("INSERT INTO leases (session_id, state) VALUES ('bad-lease', '{\"leaseId\":1}')").run();
    await expect(store.inspectExecutionLease(SessionId('bad-lease'))).rejects.toMatchObject({
      code: 'DURABLE_EVENT_CORRUPT_LOG',
    });
    await expect(store.append(SessionId('bad-lease'), created)).rejects.toMatchObject({
      code: 'DURABLE_EVENT_CORRUPT_LOG',
    });
  });

  it('reports DURABLE_EVENT_LOCK_TIMEOUT while another connection holds the write lock', async () => {
    const file = newFile();
    const store = open(file, { busyTimeoutMs: 50 });
    const sessionId = SessionId('locked');
    const blocker = new Database(file);
    cleanups.push(() => blocker.close());
    blocker.exec('BEGIN IMMEDIATE');
    await expect(store.append(sessionId, created)).rejects.toMatchObject({ code: 'DURABLE_EVENT_LOCK_TIMEOUT' });
    blocker.exec('ROLLBACK');
    await expect(store.append(sessionId, created)).resolves.toMatchObject({ lastSequence: 1 });
  });

  it('rejects every call after close with DURABLE_EVENT_UNAVAILABLE', async () => {
    const store = open(newFile());
    store.close();
    store.close();
    expect(store.open).toBe(false);
    await expect(store.append(SessionId('closed'), created)).rejects.toMatchObject({ code: 'DURABLE_EVENT_UNAVAILABLE' });
    await expect(store.getHeadSequence(SessionId('closed'))).rejects.toMatchObject({
      code: 'DURABLE_EVENT_UNAVAILABLE',
    });
  });

  it('rejects invalid options', () => {
    expect(() => new SqliteDurableEventStore('')).toThrow(expect.objectContaining({ code: 'DURABLE_EVENT_INVALID_OPTIONS' }));
    expect(() => new SqliteDurableEventStore(newFile(), { busyTimeoutMs: -1 })).toThrow(
      expect.objectContaining({ code: 'DURABLE_EVENT_INVALID_OPTIONS' }),
    );
  });

  it('lets watchers hear appends made through another connection', async () => {
    const file = newFile();
    const watcher = open(file, { watchPollIntervalMs: 5 });
    const writer = open(file);
    const sessionId = SessionId('watched');
    const notices: DurableAppendNotice[] = [];
    const heard = new Promise<void>((resolve) => {
      const stop = watcher.watch(sessionId, (notice) => {
        notices.push(notice);
        stop();
        resolve();
      });
    });
    await writer.append(sessionId, [...created, ...created]);
    await heard;
    expect(notices).toEqual([{ sessionId, lastSequence: 2 }]);
  });

  it('tells its own watchers after the commit', async () => {
    const store = open(newFile());
    const sessionId = SessionId('own-watch');
    const heads: Array<number | null> = [];
    const heard = new Promise<void>((resolve) => {
      store.watch(sessionId, () => {
        // The notice arrives after the commit: a read already sees the batch.
        void store.getHeadSequence(sessionId).then((head) => {
          heads.push(head);
          resolve();
        });
      });
    });
    await store.append(sessionId, created);
    await heard;
    expect(heads).toEqual([1]);
  });
});
