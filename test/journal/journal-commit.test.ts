/**
 * DurableSessionJournal: commits, validation, idempotent replay, conflicts, pinned heads,
 * previews and bounded conflict retries, against the memory store.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import type { DurableCommandEventDraft, DurableJournalCommand } from '../../src/core/journal/index.js';
import {
  DurableCommandConflictError,
  DurableEventProjectionError,
  DurableEventSequenceConflictError,
  DurableSessionJournalError,
} from '../../src/protocol/errors.js';
import { DurableEventType } from '../../src/protocol/events.js';
import { CommandId, EventId, EventSequence, InputId, RequestId, SessionId } from '../../src/protocol/ids.js';
import { withCommand, wrapStore } from './store-wrappers.js';

const sessionId = SessionId('journal-session');

async function openCreated(store = new MemoryDurableEventStore()) {
  const journal = await DurableSessionJournal.open(store, sessionId);
  await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
  return { store, journal };
}

async function storedTypes(store: MemoryDurableEventStore): Promise<string[]> {
  return (await store.read(sessionId, { limit: 1000 })).events.map((event) => event.type);
}

describe('DurableSessionJournal: the spec example', () => {
  it('commits a session creation and projects it as open', async () => {
    const store = new MemoryDurableEventStore();
    const journal = await DurableSessionJournal.open(store, sessionId);

    const committed = await journal.commit({
      commandId: CommandId('create-session-123'),
      events: [
        {
          type: DurableEventType.SESSION_CREATED,
          data: { source: 'create' },
        },
      ],
    });

    expect(committed.status).toBe('committed');
    expect(journal.getProjection().status).toBe('open');
    expect(committed.headSequence).toBe(1);
    expect(journal.getHeadSequence()).toBe(1);
    expect(journal.getRecoveryPlan().action).toBe('none');
  });
});

describe('DurableSessionJournal: commands', () => {
  it('stamps the commandId on every event and returns the stored envelopes', async () => {
    const { store, journal } = await openCreated();
    const result = await journal.commit({
      commandId: CommandId('accept'),
      events: [d.requestAccepted('r1'), { ...d.requestStarted('r1'), commandId: CommandId('accept') }],
    });
    expect(result.events.map((e) => [e.sequence, e.commandId])).toEqual([
      [2, 'accept'],
      [3, 'accept'],
    ]);
    expect((await store.read(sessionId)).events.map((e) => e.commandId)).toEqual(['create', 'accept', 'accept']);
    expect(result.projection.activeRequest?.requestId).toBe('r1');
  });

  it.each<[string, unknown]>([
    ['no events', { commandId: 'c', events: [] }],
    ['events not an array', { commandId: 'c', events: 'nope' }],
    ['an invalid commandId', { commandId: '', events: [d.sessionCreated()] }],
    ['a draft naming another command', { commandId: 'c', events: [{ ...d.requestStarted('r'), commandId: 'other' }] }],
    ['a draft breaking its schema', { commandId: 'c', events: [{ type: 'request_started', data: {} }] }],
    ['a draft with a store field', { commandId: 'c', events: [{ ...d.sessionCreated(), sequence: 1 }] }],
    ['a malformed expectedHeadSequence', { commandId: 'c', events: [d.sessionCreated()], expectedHeadSequence: 0 }],
    ['not an object', null],
  ])('rejects %s with DurableSessionJournalError and writes nothing', async (_name, command) => {
    const store = new MemoryDurableEventStore();
    const journal = await DurableSessionJournal.open(store, sessionId);
    // SAFETY: deliberately malformed input, to reach the run-time validation.
    await expect(journal.commit(command as DurableJournalCommand)).rejects.toBeInstanceOf(DurableSessionJournalError);
    expect(await store.getHeadSequence(sessionId)).toBeNull();
    expect(journal.getUncertainCommandId()).toBeNull();
  });

  it.each<[string, object]>([
    ['storeTimeoutMs 0', { storeTimeoutMs: 0 }],
    ['storeTimeoutMs above the maximum', { storeTimeoutMs: 300_001 }],
    ['negative maxConflictRetries', { maxConflictRetries: -1 }],
    ['fractional maxConflictRetries', { maxConflictRetries: 1.5 }],
    ['pageSize 0', { pageSize: 0 }],
    ['pageSize 1001', { pageSize: 1001 }],
    ['a lease without a signal', { executionLease: { fence: {} } }],
  ])('rejects the option %s', async (_name, options) => {
    await expect(DurableSessionJournal.open(new MemoryDurableEventStore(), sessionId, options)).rejects.toBeInstanceOf(
      DurableSessionJournalError,
    );
  });

  it('rejects an invalid session ID', async () => {
    await expect(DurableSessionJournal.open(new MemoryDurableEventStore(), '' as SessionId)).rejects.toBeInstanceOf(
      DurableSessionJournalError,
    );
  });

  it('serializes concurrent commits of one instance in call order', async () => {
    const { store, journal } = await openCreated();
    const commits = [
      journal.commit({ commandId: CommandId('a'), events: [d.requestAccepted('r1')] }),
      journal.commit({ commandId: CommandId('b'), events: [d.requestStarted('r1')] }),
      journal.commit({ commandId: CommandId('c'), events: [d.inputApplied('r1', 'i2')] }),
    ];
    const results = await Promise.all(commits);
    expect(results.map((r) => [r.status, r.headSequence])).toEqual([
      ['committed', 2],
      ['committed', 3],
      ['committed', 4],
    ]);
    expect(await storedTypes(store)).toEqual(['session_created', 'request_accepted', 'request_started', 'input_applied']);
  });

  it('keeps serving commits after a rejected one', async () => {
    const { journal } = await openCreated();
    const bad = journal.commit({ commandId: CommandId('bad'), events: [d.requestStarted('nope')] });
    const good = journal.commit({ commandId: CommandId('good'), events: [d.requestAccepted('r1')] });
    await expect(bad).rejects.toBeInstanceOf(DurableEventProjectionError);
    await expect(good).resolves.toMatchObject({ status: 'committed', headSequence: 2 });
  });

  it('loads a long log page by page on open', async () => {
    const store = new MemoryDurableEventStore();
    const writer = await DurableSessionJournal.open(store, sessionId);
    await writer.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
    await writer.commit({ commandId: CommandId('accept'), events: [d.requestAccepted('r1'), d.requestStarted('r1')] });
    for (let index = 0; index < 12; index++) {
      await writer.commit({ commandId: CommandId(`apply-${index}`), events: [d.inputApplied('r1', `i-${index}`)] });
    }
    const reader = await DurableSessionJournal.open(store, sessionId, { pageSize: 5 });
    expect(reader.getHeadSequence()).toBe(15);
    expect(reader.getProjection()).toEqual(writer.getProjection());
    await expect(
      reader.commit({ commandId: CommandId('apply-3'), events: [d.inputApplied('r1', 'i-3')] }),
    ).resolves.toMatchObject({ status: 'replayed', headSequence: 15 });
  });
});

describe('DurableSessionJournal: idempotency', () => {
  it('replays an identical command without a second copy', async () => {
    const { store, journal } = await openCreated();
    const command = { commandId: CommandId('accept'), events: [d.requestAccepted('r1'), d.requestStarted('r1')] };
    const first = await journal.commit(command);
    const again = await journal.commit(command);
    expect(again.status).toBe('replayed');
    expect(again.events).toEqual(first.events);
    expect(again.headSequence).toBe(3);
    expect(await store.getHeadSequence(sessionId)).toBe(3);
  });

  it('compares content canonically: key order does not matter', async () => {
    const { journal } = await openCreated();
    const accepted: DurableCommandEventDraft = {
      type: DurableEventType.REQUEST_ACCEPTED,
      requestId: RequestId('r1'),
      data: { inputId: InputId('i1'), input: 'go', priority: 'next', context: { b: 1, a: [1, { y: 2, x: 1 }] } },
    };
    await journal.commit({ commandId: CommandId('accept'), events: [accepted] });
    const reordered: DurableCommandEventDraft = {
      data: { priority: 'next', context: { a: [1, { x: 1, y: 2 }], b: 1 }, input: 'go', inputId: InputId('i1') },
      requestId: RequestId('r1'),
      type: DurableEventType.REQUEST_ACCEPTED,
    };
    await expect(journal.commit({ commandId: CommandId('accept'), events: [reordered] })).resolves.toMatchObject({
      status: 'replayed',
    });
  });

  it('treats a stated occurredAt as content, an omitted one as unspecified', async () => {
    const { journal } = await openCreated();
    const at = '2030-01-01T00:00:00.000Z';
    const command = { commandId: CommandId('accept'), events: [{ ...d.requestAccepted('r1'), occurredAt: at }] };
    await journal.commit(command);
    await expect(journal.commit(command)).resolves.toMatchObject({ status: 'replayed' });
    await expect(journal.commit({ commandId: CommandId('accept'), events: [d.requestAccepted('r1')] })).resolves.toMatchObject({
      status: 'replayed',
    });
    await expect(
      journal.commit({ commandId: CommandId('accept'), events: [{ ...d.requestAccepted('r1'), occurredAt: '2031-01-01T00:00:00.000Z' }] }),
    ).rejects.toBeInstanceOf(DurableCommandConflictError);
  });

  it.each<[string, DurableCommandEventDraft[]]>([
    ['different data', [d.requestAccepted('r1', 'another input'), d.requestStarted('r1')]],
    ['fewer events', [d.requestAccepted('r1')]],
    ['more events', [d.requestAccepted('r1'), d.requestStarted('r1'), d.inputApplied('r1', 'x')]],
    ['another order', [d.requestStarted('r1'), d.requestAccepted('r1')]],
    ['another causation', [d.requestAccepted('r1'), { ...d.requestStarted('r1'), causationEventId: EventId('e') }]],
  ])('throws DurableCommandConflictError for the same ID with %s', async (_name, events) => {
    const { store, journal } = await openCreated();
    await journal.commit({ commandId: CommandId('accept'), events: [d.requestAccepted('r1'), d.requestStarted('r1')] });
    const error = await journal.commit({ commandId: CommandId('accept'), events }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DurableCommandConflictError);
    expect((error as DurableCommandConflictError).details).toMatchObject({ commandId: 'accept', firstSequence: 2, lastSequence: 3 });
    expect(await store.getHeadSequence(sessionId)).toBe(3);
    expect(journal.getUncertainCommandId()).toBeNull();
  });

  it('refuses a log holding one command ID in two ranges (fail closed on open and on refresh)', async () => {
    const store = new MemoryDurableEventStore();
    await store.append(sessionId, [withCommand(d.sessionCreated(), 'x')]);
    const journal = await DurableSessionJournal.open(store, sessionId);
    await store.append(sessionId, [withCommand(d.requestAccepted('r1'), 'y')]);
    await store.append(sessionId, [withCommand(d.requestStarted('r1'), 'x')]);
    const onRefresh = await journal.refresh().catch((e: unknown) => e);
    expect(onRefresh).toBeInstanceOf(DurableEventProjectionError);
    expect((onRefresh as DurableEventProjectionError).details).toMatchObject({ rule: 'command_range' });
    // The journal stays failed: nothing more is committed through it.
    await expect(journal.commit({ commandId: CommandId('z'), events: [d.inputApplied('r1', 'i')] })).rejects.toBeInstanceOf(
      DurableEventProjectionError,
    );
    await expect(DurableSessionJournal.open(store, sessionId)).rejects.toMatchObject({ details: { rule: 'command_range' } });
  });
});

describe('DurableSessionJournal: expectedHeadSequence', () => {
  it('null requires an empty log', async () => {
    const store = new MemoryDurableEventStore();
    const journal = await DurableSessionJournal.open(store, sessionId);
    const create = { commandId: CommandId('create'), events: [d.sessionCreated()], expectedHeadSequence: null };
    await expect(journal.commit(create)).resolves.toMatchObject({ status: 'committed' });
    await expect(
      journal.commit({ commandId: CommandId('accept'), events: [d.requestAccepted('r1')], expectedHeadSequence: null }),
    ).rejects.toMatchObject({ expected: null, actual: 1 });
    // A replay skips the head check.
    await expect(journal.commit(create)).resolves.toMatchObject({ status: 'replayed' });
  });

  it('pins the decision to the observed head, seeing external writers', async () => {
    const { store, journal } = await openCreated();
    const other = await DurableSessionJournal.open(store, sessionId);
    await other.commit({ commandId: CommandId('accept-other'), events: [d.requestAccepted('r1')] });
    expect(journal.getHeadSequence()).toBe(1);
    // Stale pin (the journal's own view, 1): refused after a refresh shows head 2.
    const stale = await journal
      .commit({ commandId: CommandId('accept-mine'), events: [d.requestAccepted('r2')], expectedHeadSequence: EventSequence(1) })
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(stale).toMatchObject({ expected: 1, actual: 2 });
    expect(await store.getHeadSequence(sessionId)).toBe(2);
    // A pin ahead of the journal's view (observed elsewhere) refreshes and commits.
    await other.commit({ commandId: CommandId('start'), events: [d.requestStarted('r1')] });
    expect(journal.getHeadSequence()).toBe(2);
    await expect(
      journal.commit({ commandId: CommandId('apply'), events: [d.inputApplied('r1', 'i2')], expectedHeadSequence: EventSequence(3) }),
    ).resolves.toMatchObject({ status: 'committed', headSequence: 4 });
  });

  it('throws at once when a pinned append meets a conflict (no retry)', async () => {
    const inner = new MemoryDurableEventStore();
    let appends = 0;
    const store = wrapStore(inner, {
      append: async (append, id, drafts, options) => {
        appends += 1;
        if (appends === 2) await append(id, [withCommand(d.requestAccepted('intruder'), 'intruder')]);
        return append(id, drafts, options);
      },
    });
    const journal = await DurableSessionJournal.open(store, sessionId);
    await journal.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
    await expect(
      journal.commit({ commandId: CommandId('accept'), events: [d.requestAccepted('r1')], expectedHeadSequence: EventSequence(1) }),
    ).rejects.toMatchObject({ code: 'DURABLE_EVENT_SEQUENCE_CONFLICT', expected: 1, actual: 2 });
    expect(appends).toBe(2);
    expect(journal.getHeadSequence()).toBe(2);
  });

  it('returns reconciled when a competitor committed the pinned command', async () => {
    const { store, journal } = await openCreated();
    const other = await DurableSessionJournal.open(store, sessionId);
    const command = { commandId: CommandId('accept'), events: [d.requestAccepted('r1')], expectedHeadSequence: EventSequence(1) };
    await other.commit(command);
    await expect(journal.commit(command)).resolves.toMatchObject({ status: 'reconciled', headSequence: 2 });
    await expect(journal.commit({ ...command, expectedHeadSequence: EventSequence(1) })).resolves.toMatchObject({ status: 'replayed' });
  });
});

describe('DurableSessionJournal: conflict retries', () => {
  /** A store where another writer slips in an event right before each of the first `intrusions` appends. */
  function contended(intrusions: number) {
    const inner = new MemoryDurableEventStore();
    let appends = 0;
    let intruded = 0;
    const store = wrapStore(inner, {
      append: async (append, id, drafts, options) => {
        appends += 1;
        if (appends > 1 && intruded < intrusions) {
          intruded += 1;
          await append(id, [withCommand(d.inputApplied('r1', `intruder-${intruded}`), `intruder-${intruded}`)]);
        }
        return append(id, drafts, options);
      },
    });
    return { store, inner, appends: () => appends };
  }

  async function started(store: ReturnType<typeof contended>['store'], maxConflictRetries?: number) {
    const journal = await DurableSessionJournal.open(store, sessionId, maxConflictRetries === undefined ? {} : { maxConflictRetries });
    await journal.commit({ commandId: CommandId('begin'), events: [d.sessionCreated(), d.requestAccepted('r1'), d.requestStarted('r1')] });
    return journal;
  }

  it('refreshes and retries up to maxConflictRetries (default 3)', async () => {
    const { store, appends } = contended(3);
    const journal = await started(store);
    const result = await journal.commit({ commandId: CommandId('apply'), events: [d.inputApplied('r1', 'mine')] });
    expect(result).toMatchObject({ status: 'committed', headSequence: 7 });
    expect(appends()).toBe(1 + 4);
  });

  it('rethrows the conflict once the retries are spent', async () => {
    const { store, inner, appends } = contended(3);
    const journal = await started(store, 2);
    await expect(journal.commit({ commandId: CommandId('apply'), events: [d.inputApplied('r1', 'mine')] })).rejects.toBeInstanceOf(
      DurableEventSequenceConflictError,
    );
    expect(appends()).toBe(1 + 3);
    expect((await inner.read(sessionId)).events.some((e) => e.commandId === 'apply')).toBe(false);
    expect(journal.getUncertainCommandId()).toBeNull();
  });

  it('does not retry at all with maxConflictRetries 0', async () => {
    const { store, appends } = contended(1);
    const journal = await started(store, 0);
    await expect(journal.commit({ commandId: CommandId('apply'), events: [d.inputApplied('r1', 'mine')] })).rejects.toBeInstanceOf(
      DurableEventSequenceConflictError,
    );
    expect(appends()).toBe(2);
  });

  it('re-previews after a conflict: a competitor can make the command invalid', async () => {
    const store = new MemoryDurableEventStore();
    const mine = await DurableSessionJournal.open(store, sessionId);
    await mine.commit({ commandId: CommandId('create'), events: [d.sessionCreated()] });
    const theirs = await DurableSessionJournal.open(store, sessionId);
    await theirs.commit({ commandId: CommandId('theirs'), events: [d.requestAccepted('r-theirs')] });
    await expect(mine.commit({ commandId: CommandId('mine'), events: [d.requestAccepted('r-mine')] })).rejects.toMatchObject({
      details: { rule: 'request_lifecycle' },
    });
    expect(await store.getHeadSequence(sessionId)).toBe(2);
  });
});
