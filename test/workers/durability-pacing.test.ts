/**
 * Flow control while an agent streams (the object runs the fixture agent, inside workerd), with a
 * 4 KiB window, smaller than the run: a subscriber that does not ack is closed with 4008 when the
 * window fills; an acking subscriber beside it is held back at times (the object does not process
 * acks while a run's storage writes hold its input gate), skips deltas meanwhile and gets the text
 * in flight again, so it still renders the whole answer and is never closed; reconnecting after the
 * closed one's last cursor brings the rest of the events, the partial text and the live deltas,
 * without gap or duplicate.
 */
import { describe, expect, it, afterEach } from 'vitest';
import { unwrapRpcResult, type RpcResult } from '../../src/adapters/durable-object/rpc.js';
import type { AgentRequestAccepted } from '../../src/adapters/durable-object/agent-rpc.js';
import type { DurableReadResult } from '../../src/core/store.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { SUBSCRIBER_SLOW_CLOSE_CODE, type SubscriptionFrame } from '../../src/protocol/frames.js';
import { freshSession, objectOf } from './durability-helpers.js';
import { RawSubscriber, closeRawSubscribers, setPacingLimits } from './pacing-helpers.js';

interface AgentApi {
  submitRequest(sessionId: string, input: { commandId: string; input: string }): Promise<RpcResult<AgentRequestAccepted>>;
  read(sessionId: string, options?: { limit?: number }): Promise<RpcResult<DurableReadResult>>;
  releaseModel(): Promise<void>;
}

function api(sessionId: string): AgentApi {
  // SAFETY: the fixture object implements every AgentApi method.
  return objectOf(sessionId).api as unknown as AgentApi;
}

async function logOf(sessionId: string): Promise<DurableEventEnvelope[]> {
  return unwrapRpcResult<DurableReadResult>(await api(sessionId).read(sessionId, { limit: 1000 })).events;
}

/** The response text rebuilt from `partial_response` and `text_delta` frames, offsets checked. */
function deltaText(frames: readonly SubscriptionFrame[], modelAttemptId: string): string {
  let text = '';
  for (const frame of frames) {
    if (frame.type === 'partial_response' && frame.modelAttemptId === modelAttemptId) text = frame.text;
    if (frame.type === 'text_delta' && frame.modelAttemptId === modelAttemptId) {
      expect(frame.offset).toBe(text.length);
      text += frame.delta;
    }
  }
  return text;
}

afterEach(closeRawSubscribers);

const WINDOW = 4096;

describe('flow control while an agent streams', () => {
  it('closes a non-acking subscriber with 4008 when deltas find it behind; its reconnect is gapless', async () => {
    const sessionId = freshSession('pacing-agent');
    await logOf(sessionId);
    await setPacingLimits(sessionId, { windowBytes: WINDOW, objectWindowBytes: 1024 * 1024 });
    const silent = await RawSubscriber.open(sessionId, { ack: false });
    const acking = await RawSubscriber.open(sessionId, { ack: true, autoAck: true });
    await silent.until(() => silent.caughtUp, 'caught_up');
    await acking.until(() => acking.caughtUp, 'caught_up');

    unwrapRpcResult(await api(sessionId).submitRequest(sessionId, { commandId: `cmd-${crypto.randomUUID()}`, input: 'gated' }));
    await silent.until(() => silent.closed !== null, 'the close of the silent subscriber');
    expect(silent.closed?.code).toBe(SUBSCRIBER_SLOW_CLOSE_CODE);
    expect(silent.received).toBeLessThanOrEqual(WINDOW + 4096);
    await acking.until(() => acking.frames.some((f) => f.type === 'text_delta' || f.type === 'partial_response'), 'the text');
    expect(acking.closed).toBeNull();

    // Reconnect after the last event the silent one received, acking this time.
    const after = silent.events.at(-1)?.cursor;
    const resumed = await RawSubscriber.open(sessionId, { ack: true, autoAck: true, ...(after === undefined ? {} : { after }) });
    await resumed.until(() => resumed.frames.some((f) => f.type === 'partial_response'), 'partial_response');

    await api(sessionId).releaseModel();
    const done = (s: RawSubscriber): boolean => s.events.some((f) => f.event.type === 'request_completed');
    await acking.until(() => done(acking), 'request_completed (acking)');
    await resumed.until(() => done(resumed), 'request_completed (resumed)');
    expect(acking.closed).toBeNull();
    expect(resumed.closed).toBeNull();

    const log = await logOf(sessionId);
    const completion = log.find((event) => event.type === 'model_request_completed') as unknown as { modelAttemptId: string };
    expect(deltaText(acking.frames, completion.modelAttemptId)).toBe('one two three');
    // It was held back at least once and got the text in flight again.
    expect(acking.frames.some((f) => f.type === 'partial_response')).toBe(true);
    expect(deltaText(resumed.frames, completion.modelAttemptId)).toBe('one two three');
    expect(acking.events.map((f) => f.event.sequence)).toEqual(log.map((event) => event.sequence));
    expect([...silent.events, ...resumed.events].map((f) => f.event.sequence)).toEqual(log.map((event) => event.sequence));
  });
});
