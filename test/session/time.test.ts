/**
 * The Session's `time` option: a tool's durable `sleep` waits on the Session's timers (here a
 * `ManualTimeSource`, so an hour passes without waiting), and events are stamped from its wall
 * clock unless `clock` is given.
 */
import { describe, expect, it } from 'vitest';
import { ManualTimeSource, SessionDurableRecorderError } from '../../src/index.js';
import { createScriptedModel, createSession, defineTool } from '../../src/session.js';
import { memoryStore, readAll } from './helpers.js';

const HOUR = 60 * 60 * 1000;

function napModel() {
  return createScriptedModel([
    { text: 'Napping.', toolCalls: [{ toolCallId: 'c1', toolName: 'nap', input: {} }] },
    { text: 'Rested.' },
  ]);
}

describe('Session time option', () => {
  it("drives a tool's durable sleep with the given timers and stamps events from its clock", async () => {
    const time = new ManualTimeSource(Date.UTC(2026, 5, 1));
    const start = time.wallNow();
    let woke: number | undefined;
    const nap = defineTool({
      sideEffect: 'idempotent',
      execute: async (_input: Record<string, never>, context) => {
        if (context.sleep === undefined) throw new Error('no durability port');
        await context.sleep('nap', HOUR);
        woke = time.wallNow();
        return { slept: true };
      },
    });
    const store = memoryStore();
    const session = await createSession({ sessionId: 's-time', model: napModel(), tools: { nap }, durableEventStore: store, time });
    const running = session.run('take a nap');
    // The sleep is armed on the manual timers: nothing moves until the test advances them.
    for (let attempt = 0; attempt < 200 && time.pendingTimers === 0; attempt += 1) await new Promise((resolve) => setImmediate(resolve));
    expect(time.pendingTimers).toBeGreaterThan(0);
    expect(woke).toBeUndefined();
    await time.advance(HOUR - 1);
    expect(woke).toBeUndefined();
    await time.advance(1);
    const result = await running;
    expect(result).toMatchObject({ status: 'completed', output: 'Rested.' });
    expect(woke).toBe(start + HOUR);
    const events = await readAll(store, 's-time');
    expect(events[0]?.occurredAt).toBe(new Date(start).toISOString());
    expect(events.at(-1)?.occurredAt).toBe(new Date(start + HOUR).toISOString());
    await session.close();
  });

  it('refuses a time option that is not a TimeSource', async () => {
    const attempt = createSession({
      model: napModel(),
      // @ts-expect-error -- deliberately wrong type
      time: { wallNow: () => 0 },
    });
    await expect(attempt).rejects.toBeInstanceOf(SessionDurableRecorderError);
    await expect(attempt).rejects.toThrow(/time must be a TimeSource/);
  });
});
