/**
 * DurableSessionJournal after failed writes: read-after-failure reconciliation, the uncertain
 * command fence, store deadlines and cancellation, against the memory store.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d, writtenButFailedStore } from '../../src/conformance/checks-journal.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import {
  DurableCommandConflictError,
  DurableCommandOutcomeUnknownError,
  DurableEventStoreError,
  DurableSessionJournalError,
  isAbortError,
} from '../../src/protocol/errors.js';
import { CommandId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { deferred, sleepIgnoringSignal, withCommand, wrapStore } from './store-wrappers.js';

const sessionId = SessionId('reconcile-session');
const accept = { commandId: CommandId('accept'), events: [d.requestAccepted('r1')] };
const other = { commandId: CommandId('other'), events: [d.requestAccepted('r2')] };

/** A memory store whose next commit fails before anything is written (`testHooks.beforeCommit`). */
function failingBeforeCommit() {
  let failNext = false;
  const store = new MemoryDurableEventStore({
    testHooks: {
      beforeCommit: () => {
        if (!failNext) return;
        failNext = false;
        throw new Error('disk full');
      },
    },
  });
  return { store, arm: () => (failNext = true) };
}

async function created(store: Parameters<typeof DurableSessionJournal.open>[0], options = {}) {
  const journal = await DurableSessionJournal.open(store, sessionId, options);
  await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
  return journal;
}

describe('DurableSessionJournal: read-after-failure reconciliation', () => {
  it('returns reconciled when the failed write is in the log (written, then WRITE_FAILED)', async () => {
    const inner = new MemoryDurableEventStore();
    const journal = await created(inner);
    const failing = writtenButFailedStore(inner);
    const viaFailing = await DurableSessionJournal.open(failing, sessionId);
    const result = await viaFailing.commit(accept);
    expect(result.status).toBe('reconciled');
    expect(result.events.map((e) => [e.sequence, e.commandId])).toEqual([[2, 'accept']]);
    expect(viaFailing.getUncertainCommandId()).toBeNull();
    expect((await inner.read(sessionId)).events).toHaveLength(2);
    await expect(journal.commit(accept)).resolves.toMatchObject({ status: 'reconciled' });
  });

  it('throws DurableCommandOutcomeUnknownError and fences other commands when the write is absent', async () => {
    const { store, arm } = failingBeforeCommit();
    const journal = await created(store);
    arm();
    const error = await journal.commit(accept).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DurableCommandOutcomeUnknownError);
    expect((error as DurableCommandOutcomeUnknownError).cause).toMatchObject({ code: 'DURABLE_EVENT_WRITE_FAILED' });
    expect(journal.getUncertainCommandId()).toBe('accept');

    await expect(journal.commit(other)).rejects.toMatchObject({
      code: 'DURABLE_COMMAND_OUTCOME_UNKNOWN',
      details: { uncertainCommandId: 'accept', commandId: 'other' },
    });
    // Even a replay of an already committed command is refused while another one is uncertain.
    await expect(journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] })).rejects.toBeInstanceOf(
      DurableCommandOutcomeUnknownError,
    );
    // Resubmitting only reads: still absent, still uncertain, nothing appended.
    await expect(journal.commit(accept)).rejects.toBeInstanceOf(DurableCommandOutcomeUnknownError);
    expect(journal.getUncertainCommandId()).toBe('accept');
    expect(await store.getHeadSequence(sessionId)).toBe(1);

    // The way out: a new journal opened once the host has verified the log.
    const fresh = await DurableSessionJournal.open(store, sessionId);
    await expect(fresh.commit(accept)).resolves.toMatchObject({ status: 'committed', headSequence: 2 });
  });

  it('clears the uncertainty when a resubmission finds the command (written late, e.g. by another process)', async () => {
    const { store, arm } = failingBeforeCommit();
    const journal = await created(store);
    arm();
    await expect(journal.commit(accept)).rejects.toBeInstanceOf(DurableCommandOutcomeUnknownError);
    await store.append(sessionId, [withCommand(d.requestAccepted('r1'), 'accept')]);
    await expect(journal.commit(accept)).resolves.toMatchObject({ status: 'reconciled', headSequence: 2 });
    expect(journal.getUncertainCommandId()).toBeNull();
    await expect(journal.commit({ commandId: CommandId('start'), events: [d.requestStarted('r1')] })).resolves.toMatchObject({
      status: 'committed',
    });
  });

  it('reports a conflict (and clears the uncertainty) when the ID turns up with other content', async () => {
    const { store, arm } = failingBeforeCommit();
    const journal = await created(store);
    arm();
    await expect(journal.commit(accept)).rejects.toBeInstanceOf(DurableCommandOutcomeUnknownError);
    await store.append(sessionId, [withCommand(d.requestAccepted('r1', 'different input'), 'accept')]);
    await expect(journal.commit(accept)).rejects.toBeInstanceOf(DurableCommandConflictError);
    expect(journal.getUncertainCommandId()).toBeNull();
  });

  it('stays uncertain when the reconciliation read itself fails, and reconciles once reads work', async () => {
    const inner = new MemoryDurableEventStore();
    await created(inner);
    let readsFail = false;
    const store = wrapStore(inner, {
      append: async (append, ...args) => {
        await append(...args);
        readsFail = true;
        throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', 'fsync failed');
      },
      read: async (read, ...args) => {
        if (readsFail) throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'backend down');
        return read(...args);
      },
    });
    const journal = await DurableSessionJournal.open(store, sessionId);
    const error = await journal.commit(accept).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DurableCommandOutcomeUnknownError);
    expect((error as DurableCommandOutcomeUnknownError).details).toMatchObject({
      commandId: 'accept',
      reloadFailure: expect.stringContaining('backend down'),
    });
    expect(journal.getUncertainCommandId()).toBe('accept');
    await expect(journal.commit(accept)).rejects.toBeInstanceOf(DurableCommandOutcomeUnknownError);
    readsFail = false;
    await expect(journal.commit(accept)).resolves.toMatchObject({ status: 'reconciled', headSequence: 2 });
    expect(journal.getUncertainCommandId()).toBeNull();
  });

  it.each([
    ['DURABLE_EVENT_UNAVAILABLE', () => new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'gone')],
    ['DURABLE_EVENT_IO_TIMEOUT', () => new DurableEventStoreError('DURABLE_EVENT_IO_TIMEOUT', 'slow')],
    ['an unclassified exception', () => new TypeError('socket hang up')],
  ])('treats %s from append as an unknown outcome', async (_name, makeError) => {
    const inner = new MemoryDurableEventStore();
    await created(inner);
    const store = wrapStore(inner, {
      append: async () => {
        throw makeError();
      },
    });
    const journal = await DurableSessionJournal.open(store, sessionId);
    await expect(journal.commit(accept)).rejects.toBeInstanceOf(DurableCommandOutcomeUnknownError);
    expect(journal.getUncertainCommandId()).toBe('accept');
  });

  it.each([
    ['DURABLE_EVENT_LOCK_TIMEOUT', () => new DurableEventStoreError('DURABLE_EVENT_LOCK_TIMEOUT', 'lock busy')],
    ['DURABLE_EVENT_LIMIT_EXCEEDED', () => new DurableEventStoreError('DURABLE_EVENT_LIMIT_EXCEEDED', 'too big')],
  ])('rethrows %s, which proves nothing was written, without making the command uncertain', async (code, makeError) => {
    const inner = new MemoryDurableEventStore();
    await created(inner);
    let fail = true;
    const store = wrapStore(inner, {
      append: async (append, ...args) => {
        if (fail) {
          fail = false;
          throw makeError();
        }
        return append(...args);
      },
    });
    const journal = await DurableSessionJournal.open(store, sessionId);
    await expect(journal.commit(accept)).rejects.toMatchObject({ code });
    expect(journal.getUncertainCommandId()).toBeNull();
    await expect(journal.commit(accept)).resolves.toMatchObject({ status: 'committed' });
  });
});

describe('DurableSessionJournal: a store breaking the append contract', () => {
  it('refuses an acknowledgement that does not match the command, then refreshes before deciding', async () => {
    const inner = new MemoryDurableEventStore();
    await created(inner);
    let lie = true;
    const store = wrapStore(inner, {
      append: async (append, ...args) => {
        const result = await append(...args);
        if (!lie) return result;
        lie = false;
        return { ...result, events: result.events.map((e) => ({ ...e, sequence: EventSequence(e.sequence + 5) })) };
      },
    });
    const journal = await DurableSessionJournal.open(store, sessionId);
    await expect(journal.commit(accept)).rejects.toBeInstanceOf(DurableSessionJournalError);
    expect(journal.getUncertainCommandId()).toBeNull();
    // The write did happen: the next commit refreshes first and finds it.
    await expect(journal.commit(accept)).resolves.toMatchObject({ status: 'replayed', headSequence: 2 });
    expect((await inner.read(sessionId)).events).toHaveLength(2);
  });
});

describe('DurableSessionJournal: store deadlines and cancellation', () => {
  it('treats an append that outlives storeTimeoutMs as an unknown outcome, reconciled after it lands', async () => {
    const inner = new MemoryDurableEventStore();
    await created(inner);
    const landed = deferred();
    const store = wrapStore(inner, {
      append: async (append, id, drafts, options) => {
        await sleepIgnoringSignal(60);
        // A store ignoring its signal: the write still happens after the deadline.
        const result = await append(id, drafts, { ...options, signal: undefined });
        landed.resolve();
        return result;
      },
    });
    const journal = await DurableSessionJournal.open(store, sessionId, { storeTimeoutMs: 10 });
    const error = await journal.commit(accept).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DurableCommandOutcomeUnknownError);
    expect((error as Error).cause).toMatchObject({ code: 'DURABLE_EVENT_IO_TIMEOUT' });
    expect(journal.getUncertainCommandId()).toBe('accept');
    await expect(journal.commit(other)).rejects.toBeInstanceOf(DurableCommandOutcomeUnknownError);
    await landed.promise;
    await expect(journal.commit(accept)).resolves.toMatchObject({ status: 'reconciled', headSequence: 2 });
  });

  it('bounds reads by storeTimeoutMs too', async () => {
    const inner = new MemoryDurableEventStore();
    await created(inner);
    const store = wrapStore(inner, {
      read: async (read, ...args) => {
        await sleepIgnoringSignal(50);
        return read(...args);
      },
    });
    await expect(DurableSessionJournal.open(store, sessionId, { storeTimeoutMs: 5 })).rejects.toMatchObject({
      code: 'DURABLE_EVENT_IO_TIMEOUT',
    });
  });

  it('an abort before the append writes nothing and leaves no uncertainty', async () => {
    const store = new MemoryDurableEventStore();
    const journal = await created(store);
    const controller = new AbortController();
    controller.abort();
    const error = await journal.commit(accept, { signal: controller.signal }).catch((e: unknown) => e);
    expect(isAbortError(error)).toBe(true);
    expect(journal.getUncertainCommandId()).toBeNull();
    await expect(journal.commit(accept)).resolves.toMatchObject({ status: 'committed' });
  });

  it('an abort while the append is in flight leaves the outcome unknown', async () => {
    const inner = new MemoryDurableEventStore();
    await created(inner);
    const entered = deferred();
    const store = wrapStore(inner, {
      append: async (append, id, drafts, options) => {
        entered.resolve();
        await sleepIgnoringSignal(30);
        return append(id, drafts, { ...options, signal: undefined });
      },
    });
    const journal = await DurableSessionJournal.open(store, sessionId);
    const controller = new AbortController();
    const pending = journal.commit(accept, { signal: controller.signal });
    await entered.promise;
    controller.abort();
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DurableCommandOutcomeUnknownError);
    expect(isAbortError((error as Error).cause)).toBe(true);
    expect(journal.getUncertainCommandId()).toBe('accept');
  });

  it('an abort cancels open', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await DurableSessionJournal.open(new MemoryDurableEventStore(), sessionId, { signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    expect(isAbortError(error)).toBe(true);
  });
});
