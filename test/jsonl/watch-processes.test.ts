/**
 * `watch` and `watchDurability` across processes: a child process writes while listeners in this
 * process are registered. The store here has no `watchPollIntervalMs`, and the subscription's
 * own poll interval is 60 s (it does not poll a store with `watch` anyway), so anything heard
 * within the test's few seconds came through `fs.watch`.
 */
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { JsonlDurableEventStore } from '../../src/advanced.js';
import { fileWatchState } from '../../src/adapters/node/jsonl/watch-registry.js';
import { DurableEventSubscription, type DurableSubscriptionMessage } from '../../src/core/subscription/index.js';
import { SessionId } from '../../src/protocol/ids.js';
import { finished, runFixture, startFixture, tagDraft, tagOf, tempRoot } from './helpers.js';

const { root, cleanup } = tempRoot();
afterAll(cleanup);

let counter = 0;
const newSession = (): SessionId => SessionId(`watched-${counter++}`);

/** Resolves once `condition()` holds, checking after every macrotask turn; rejects after `ms`. */
function until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const check = (): void => {
      if (condition()) resolve();
      else if (Date.now() - started > ms) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(check, 5);
    };
    check();
  });
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function strictlyIncreasing(values: number[]): boolean {
  return values.every((value, index) => index === 0 || value > (values[index - 1] ?? 0));
}

describe('cross-process notification', () => {
  it('delivers another process’s appends to a live subscription without polling', async () => {
    const sessionId = newSession();
    const store = new JsonlDurableEventStore(root);
    await store.append(sessionId, [tagDraft('before')]);
    const subscription = await DurableEventSubscription.open(store, sessionId, { pollIntervalMs: 60_000 });
    const received: DurableSubscriptionMessage[] = [];
    const consuming = (async () => {
      for await (const message of subscription) {
        received.push(message);
        if (message.type === 'event' && message.event.sequence === 6) break;
      }
    })();
    await until(() => received.some((message) => message.type === 'caught_up'), 'caught_up');
    const log = store.pathsOf(sessionId).log;
    expect(fileWatchState(log)).toEqual({ listeners: 1, watching: true });

    const child = startFixture('paced-writer', [root, sessionId, 'events', '5', '20']);
    const exit = finished(child);
    try {
      await until(() => received.some((m) => m.type === 'event' && m.event.sequence === 6), 'the 5 live events');
    } finally {
      subscription.close();
    }
    await consuming;
    expect((await exit).code).toBe(0);
    const live = received.flatMap((message) => (message.type === 'event' && message.live ? [message.event] : []));
    expect(live.map((event) => event.sequence)).toEqual([2, 3, 4, 5, 6]);
    expect(live.map(tagOf)).toEqual(['paced-0', 'paced-1', 'paced-2', 'paced-3', 'paced-4']);
    // The last listener left: the watcher is closed.
    expect(fileWatchState(log)).toEqual({ listeners: 0, watching: false });
    await store.close();
  });

  it('hears a burst on a session whose files did not exist yet, with increasing coalesced notices', async () => {
    const emptyRoot = tempRoot();
    try {
      const sessionId = newSession();
      const store = new JsonlDurableEventStore(emptyRoot.root);
      const notices: number[] = [];
      const stop = store.watch(sessionId, (notice) => {
        expect(notice.sessionId).toBe(sessionId);
        notices.push(notice.lastSequence);
      });
      expect(existsSync(store.pathsOf(sessionId).log)).toBe(false);
      await runFixture('paced-writer', [emptyRoot.root, sessionId, 'events', '30']);
      await until(() => notices.at(-1) === 30, 'a notice of sequence 30');
      expect(strictlyIncreasing(notices)).toBe(true);
      expect(notices.length).toBeLessThanOrEqual(30);
      stop();
      await store.close();
    } finally {
      emptyRoot.cleanup();
    }
  });

  it('notifies this process’s own appends exactly once each, even after the file events arrive', async () => {
    const sessionId = newSession();
    const store = new JsonlDurableEventStore(root);
    const notices: number[] = [];
    const stop = store.watch(sessionId, (notice) => notices.push(notice.lastSequence));
    for (let i = 0; i < 5; i++) await store.append(sessionId, [tagDraft(`own-${i}`)]);
    await Promise.all([store.append(sessionId, [tagDraft('g1')]), store.append(sessionId, [tagDraft('g2')])]);
    // Give the file events of these writes time to arrive and be looked at.
    await pause(150);
    expect(notices).toEqual([1, 2, 3, 4, 5, 6, 7]);
    stop();
    await store.close();
  });

  it('pushes durability records created by another process to watchDurability, and nothing for duplicates', async () => {
    const sessionId = newSession();
    const store = new JsonlDurableEventStore(root);
    await store.recordDurability(sessionId, { kind: 'step', scope: 'mine', key: 'first', result: 1 });
    const notices: number[] = [];
    const stop = store.watchDurability(sessionId, (notice) => {
      expect(notice.sessionId).toBe(sessionId);
      notices.push(notice.lastSequence);
    });
    expect(fileWatchState(store.pathsOf(sessionId).durability).watching).toBe(true);
    await runFixture('paced-writer', [root, sessionId, 'ledger', '3', '10']);
    await until(() => notices.at(-1) === 4, 'a notice of record 4');
    expect(strictlyIncreasing(notices)).toBe(true);
    const heard = notices.length;
    // The same records again: nothing is created, so nothing is written or heard.
    await runFixture('paced-writer', [root, sessionId, 'ledger', '3']);
    await pause(150);
    expect(notices).toHaveLength(heard);
    expect((await store.readDurability(sessionId)).headSequence).toBe(4);
    stop();
    await store.close();
  });

  it('validates watchPollIntervalMs', () => {
    expect(new JsonlDurableEventStore(root, { watchPollIntervalMs: 250 }).watchPollIntervalMs).toBe(250);
    expect(new JsonlDurableEventStore(root).watchPollIntervalMs).toBeUndefined();
    for (const bad of [0, 9, 1.5, -1, 3_600_001, '100']) {
      // SAFETY: deliberately invalid input; the constructor must refuse it at run time.
      expect(() => new JsonlDurableEventStore(root, { watchPollIntervalMs: bad as number })).toThrow(
        expect.objectContaining({ code: 'DURABLE_EVENT_INVALID_OPTIONS' }),
      );
    }
  });
});
