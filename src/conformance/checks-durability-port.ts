/**
 * Durability port checks: `createDurabilityPort` replaying over the backend under test. They
 * prove end to end what the durability rules promise: a recorded step is not run again (also after
 * a restart), a deadline is recorded once, an early delivery answers a later wait, and a
 * recorded timeout is replayed as a timeout even when a delivery arrives afterwards.
 */
import { createDurabilityPort } from '../core/durability/port.js';
import type { DurabilityPort } from '../core/durability/port-types.js';
import type { SessionId } from '../protocol/ids.js';
import { assertDeepEqual, assertEqual } from './assertions.js';
import { durabilityStoreOf, readAllRecords, type DurabilityConformanceStore } from './durability-helpers.js';
import type { ConformanceCheck, ConformanceContext } from './types.js';

type Check = ConformanceCheck<DurabilityConformanceStore>;
type Ctx = ConformanceContext<DurabilityConformanceStore>;

/** Runs `use` with a fresh port over the current store and closes it afterwards. */
async function withPort<T>(ctx: Ctx, sessionId: SessionId, runId: string, use: (port: DurabilityPort) => Promise<T>): Promise<T> {
  const port = createDurabilityPort({ store: durabilityStoreOf(ctx), sessionId, runId });
  try {
    return await use(port);
  } finally {
    port.close();
  }
}

const stepReplays: Check = {
  name: 'durability-port-step-replays',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    let runs = 0;
    const body = async () => {
      runs += 1;
      return { run: runs, tags: ['a'] };
    };
    const first = await withPort(ctx, sessionId, 'run-1', async (port) => {
      const value = await port.step('work', body);
      value.tags.push('mutated by the caller');
      assertDeepEqual(await port.step('work', body), { run: 1, tags: ['a'] }, 'same port, second call');
      return value;
    });
    assertEqual(first.run, 1, 'first execution');
    const replayed = await withPort(ctx, sessionId, 'run-1', (port) => port.step('work', body));
    assertDeepEqual(replayed, { run: 1, tags: ['a'] }, 'replay in a new port');
    assertEqual(runs, 1, 'body runs');
    const otherRun = await withPort(ctx, sessionId, 'run-2', (port) => port.step('work', body));
    assertEqual(otherRun.run, 2, 'another run is another scope');
  },
};

const stepReplaysAfterRestart: Check = {
  name: 'durability-port-step-replays-after-restart',
  requires: ['restart'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const effects: string[] = [];
    await withPort(ctx, sessionId, 'run-1', (port) => port.step('first', () => (effects.push('first'), 'one')));
    await ctx.restart();
    const results = await withPort(ctx, sessionId, 'run-1', async (port) => [
      await port.step('first', () => (effects.push('first again'), 'other')),
      await port.step('second', () => (effects.push('second'), 'two')),
    ]);
    assertDeepEqual(results, ['one', 'two'], 'results after restart');
    assertDeepEqual(effects, ['first', 'second'], 'effects');
  },
};

const sleepDeadlineOnce: Check = {
  name: 'durability-port-sleep-deadline-recorded-once',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await withPort(ctx, sessionId, 'run-1', (port) => port.sleep('nap', 1));
    // A replay asking for an hour keeps the recorded (already passed) deadline and returns at once.
    await withPort(ctx, sessionId, 'run-1', (port) => port.sleep('nap', 3_600_000));
    const records = await readAllRecords(durabilityStoreOf(ctx), sessionId);
    assertDeepEqual(records.map((r) => r.kind), ['sleep'], 'one sleep record');
  },
};

const earlyDelivery: Check = {
  name: 'durability-port-wait-sees-early-delivery',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await withPort(ctx, sessionId, 'run-1', (port) =>
      port.deliver({ key: 'approval', deliveryId: 'd-1', payload: { approved: true } }),
    );
    const result = await withPort(ctx, sessionId, 'run-1', (port) => port.waitFor('approval', { timeoutMs: 60_000 }));
    assertDeepEqual(
      result,
      { status: 'delivered', payload: { approved: true }, deliveryId: 'd-1', sequence: 1 },
      'wait after an early delivery',
    );
  },
};

const timeoutReplays: Check = {
  name: 'durability-port-timeout-replays',
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    const first = await withPort(ctx, sessionId, 'run-1', (port) => port.waitFor('approval', { timeoutMs: 0 }));
    assertEqual(first.status, 'timed_out', 'first wait');
    await withPort(ctx, sessionId, 'run-1', (port) => port.deliver({ key: 'approval', deliveryId: 'late', payload: 1 }));
    const replay = await withPort(ctx, sessionId, 'run-1', (port) => port.waitFor('approval', { timeoutMs: 0 }));
    assertDeepEqual(replay, first, 'a replay decides the same way despite the late delivery');
  },
};

/** Port-level checks, included in `durabilityConformanceChecks`. */
export const durabilityPortChecks: Check[] = [
  stepReplays,
  stepReplaysAfterRestart,
  sleepDeadlineOnce,
  earlyDelivery,
  timeoutReplays,
];
