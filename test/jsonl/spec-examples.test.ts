/**
 * The store spec's JSONL examples, run against JsonlDurableEventStore: construction with and
 * without the timeout options (and the option rules), the three-event append with
 * `expectedLastSequence: null`, a compare-and-append conflict, and cursor reads.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_LOCK_TIMEOUT_MS, JsonlDurableEventStore } from '../../src/advanced.js';
import { DurableEventSequenceConflictError, DurableEventStoreError } from '../../src/protocol/errors.js';
import { DurableEventType } from '../../src/protocol/events.js';
import { CommandId, EventSequence, InputId, RequestId, SessionId } from '../../src/protocol/ids.js';
import { MAX_DURABLE_STORE_TIMEOUT_MS } from '../../src/protocol/limits.js';
import { tagDraft, tempRoot } from './helpers.js';

const { root, cleanup } = tempRoot();
afterAll(cleanup);

function optionError(build: () => unknown): unknown {
  try {
    build();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('JSONL examples of the store spec', () => {
  it('constructs with defaults and with both timeout options', () => {
    const store = new JsonlDurableEventStore(root);
    expect(store.lockTimeoutMs).toBe(DEFAULT_LOCK_TIMEOUT_MS);
    expect(store.lockTimeoutMs).toBe(10_000);
    expect(store.operationTimeoutMs).toBe(25_000);
    const boundedWaitStore = new JsonlDurableEventStore(root, { lockTimeoutMs: 15_000, operationTimeoutMs: 30_000 });
    expect(boundedWaitStore.lockTimeoutMs).toBe(15_000);
    expect(boundedWaitStore.operationTimeoutMs).toBe(30_000);
    // The default operation budget follows the lock budget and is capped.
    expect(new JsonlDurableEventStore(root, { lockTimeoutMs: 0 }).operationTimeoutMs).toBe(15_000);
    expect(new JsonlDurableEventStore(root, { lockTimeoutMs: 1_000 }).operationTimeoutMs).toBe(16_000);
    expect(new JsonlDurableEventStore(root, { lockTimeoutMs: MAX_DURABLE_STORE_TIMEOUT_MS }).operationTimeoutMs).toBe(
      MAX_DURABLE_STORE_TIMEOUT_MS,
    );
    expect(new JsonlDurableEventStore(root, { lockTimeoutMs: 500, operationTimeoutMs: 500 }).operationTimeoutMs).toBe(500);
  });

  it.each([
    ['an operation budget below the lock budget', { lockTimeoutMs: 15_000, operationTimeoutMs: 10_000 }],
    ['a negative lock budget', { lockTimeoutMs: -1 }],
    ['a fractional lock budget', { lockTimeoutMs: 1.5 }],
    ['a lock budget above the maximum', { lockTimeoutMs: MAX_DURABLE_STORE_TIMEOUT_MS + 1 }],
    ['a zero operation budget', { lockTimeoutMs: 0, operationTimeoutMs: 0 }],
    ['a string budget', { operationTimeoutMs: '30000' }],
    ['an unknown option', { lockTimeout: 5 }],
    ['a clock that is not a function', { clock: 5 }],
  ])('rejects %s with DURABLE_EVENT_INVALID_OPTIONS', (_name, options) => {
    // SAFETY (test): deliberately wrong option values, as untyped JavaScript callers could pass them.
    const error = optionError(() => new JsonlDurableEventStore(root, options as never));
    expect(error).toBeInstanceOf(DurableEventStoreError);
    expect((error as DurableEventStoreError).code).toBe('DURABLE_EVENT_INVALID_OPTIONS');
  });

  it('rejects a missing storage root with DURABLE_EVENT_INVALID_OPTIONS', () => {
    const error = optionError(() => new JsonlDurableEventStore(''));
    expect((error as DurableEventStoreError).code).toBe('DURABLE_EVENT_INVALID_OPTIONS');
  });

  it('appends the three-event batch of the example as one batch', async () => {
    const store = new JsonlDurableEventStore(root);
    const sessionId = SessionId('session-123');
    const requestId = RequestId('request-123');
    const commandId = CommandId('command-123');
    const inputId = InputId('input-123');
    const result = await store.append(
      sessionId,
      [
        { type: DurableEventType.SESSION_CREATED, data: { source: 'create' } },
        {
          type: DurableEventType.REQUEST_ACCEPTED,
          requestId,
          commandId,
          data: { inputId, input: 'Run the deployment checks', priority: 'next' },
        },
        { type: DurableEventType.REQUEST_STARTED, requestId, data: {} },
      ],
      { expectedLastSequence: null },
    );
    expect(result.previousSequence).toBeNull();
    expect(result.lastSequence).toBe(3);
    expect(result.events.map((event) => event.sequence)).toEqual([1, 2, 3]);
    expect(result.events.every((event) => event.sessionId === sessionId && event.schemaVersion === 4)).toBe(true);
    const page = await new JsonlDurableEventStore(root).read(sessionId);
    expect(page.events).toEqual(result.events);
  });

  it('rejects a stale compare-and-append with DurableEventSequenceConflictError', async () => {
    const store = new JsonlDurableEventStore(root);
    const sessionId = SessionId('session-cas');
    await store.append(sessionId, [tagDraft('one'), tagDraft('two'), tagDraft('three')], { expectedLastSequence: null });
    const error = await store
      .append(sessionId, [tagDraft('late')], { expectedLastSequence: EventSequence(12) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DurableEventSequenceConflictError);
    expect(error).toMatchObject({ code: 'DURABLE_EVENT_SEQUENCE_CONFLICT', expected: 12, actual: 3 });
    const again = await store.append(sessionId, [tagDraft('x')], { expectedLastSequence: null }).catch((e: unknown) => e);
    expect(again).toMatchObject({ expected: null, actual: 3 });
    const ok = await store.append(sessionId, [tagDraft('four')], { expectedLastSequence: EventSequence(3) });
    expect(ok.lastSequence).toBe(4);
    expect(await store.getHeadSequence(sessionId)).toBe(4);
  });

  it('reads pages with an exclusive cursor and rejects a cursor ahead of the head', async () => {
    const store = new JsonlDurableEventStore(root);
    const sessionId = SessionId('session-cursor');
    for (let batch = 0; batch < 25; batch++) {
      await store.append(sessionId, [tagDraft(`e${batch * 2}`), tagDraft(`e${batch * 2 + 1}`)]);
    }
    const page = await store.read(sessionId, { after: EventSequence(20), limit: 100 });
    expect(page.events.map((event) => event.sequence)).toEqual(Array.from({ length: 30 }, (_, i) => 21 + i));
    expect(page.nextCursor).toBe(50);
    expect(page.headSequence).toBe(50);
    expect(page.hasMore).toBe(false);
    const small = await store.read(sessionId, { after: EventSequence(20), limit: 3 });
    expect(small.events.map((event) => event.sequence)).toEqual([21, 22, 23]);
    expect(small).toMatchObject({ nextCursor: 23, headSequence: 50, hasMore: true });
    const end = await store.read(sessionId, { after: EventSequence(50) });
    expect(end).toMatchObject({ events: [], nextCursor: 50, hasMore: false });
    await expect(store.read(sessionId, { after: EventSequence(51) })).rejects.toMatchObject({
      code: 'DURABLE_EVENT_INVALID_CURSOR',
    });
    await expect(store.read(sessionId, { limit: 0 })).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    await expect(store.read(sessionId, { limit: 1001 })).rejects.toMatchObject({ code: 'DURABLE_EVENT_INVALID_INPUT' });
    await expect(store.read(SessionId('never-written'), { after: EventSequence(1) })).rejects.toMatchObject({
      code: 'DURABLE_EVENT_INVALID_CURSOR',
    });
  });
});
