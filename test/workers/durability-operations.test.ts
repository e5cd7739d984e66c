/**
 * Inside workerd: the durability operations are rows of SESSION_OPERATIONS (host `durability`).
 * Their positional RPC methods keep their signatures and checks, and a call whose answer never
 * came is reported by the row's kind: a write (`recordDurability`, `startToolCall`,
 * `runToolCall`, `deliver`) has an unknown outcome (`DURABLE_EVENT_WRITE_FAILED`), a read
 * (`readDurability`, `getRun`) is unavailable — through `sessionClient`, `DurableObjectEventStore`
 * and the object's one RPC client alike.
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { DurableObjectEventStore } from '../../src/adapters/durable-object/durable-object-store.js';
import { sessionClient } from '../../src/adapters/durable-object/session-client.js';
import { callOperation } from '../../src/adapters/durable-object/operation-client.js';
import { unwrapRpcResult } from '../../src/adapters/durable-object/rpc.js';
import { SessionId } from '../../src/protocol/ids.js';
import type { JsonValue } from '../../src/protocol/json.js';
import { freshSession, objectOf, runState, TEST_AGENT } from './durability-helpers.js';

/** A value Workers RPC cannot serialize: the call fails in transit, before the object runs it. */
// SAFETY: deliberately not JSON; only used to make an RPC argument unsendable.
const unsendable = Symbol('unsendable') as unknown as JsonValue;

describe('durability operations over RPC', () => {
  it('keep their positional signatures and their own checks', async () => {
    const sessionId = freshSession('dur-ops');
    const { api } = objectOf(sessionId);
    const recorded = unwrapRpcResult<{ created: boolean; record: { sequence: number } }>(
      await api.recordDurability(sessionId, { kind: 'step', scope: 'scope-1', key: 'k', result: 1 }),
    );
    expect(recorded).toMatchObject({ created: true, record: { sequence: 1 } });
    const page = unwrapRpcResult<{ records: unknown[]; headSequence: number | null }>(await api.readDurability(sessionId));
    expect(page).toMatchObject({ headSequence: 1, records: [{ kind: 'step', key: 'k', result: 1 }] });
    expect(await runState(api, sessionId, 'no-run')).toEqual({ runId: 'no-run', status: 'unknown', toolCalls: [] });
    // SAFETY: deliberately not the declared argument types (RPC callers are untrusted).
    const badOptions = 5 as unknown as { after?: number };
    expect(await api.readDurability(sessionId, badOptions)).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EVENT_INVALID_INPUT', message: 'readDurability options must be an object' },
    });
    // SAFETY: as above.
    expect(await api.getRun(sessionId, 7 as unknown as string)).toMatchObject({ ok: false, error: { code: 'DURABILITY_INVALID_INPUT' } });
    expect(await api.startToolCall(sessionId, { runId: 'r', agent: TEST_AGENT, toolName: 'no-such-tool', toolCallId: 'c', input: null })).toMatchObject({
      ok: false,
      error: { code: 'DURABILITY_INVALID_INPUT' },
    });
    // The object's one RPC entry serves the same rows.
    const viaOperation = await callOperation(objectOf(sessionId).stub, sessionId, 'readDurability', { after: 1 });
    expect(viaOperation).toMatchObject({ records: [], headSequence: 1, hasMore: false });
  });

  it('report a lost answer by the row kind: a write as an unknown outcome, a read as unavailable', async () => {
    const sessionId = SessionId(freshSession('dur-lost'));
    const session = sessionClient(env.SESSIONS, sessionId);
    const call = { runId: 'r', agent: TEST_AGENT, toolName: 'sleepy', toolCallId: 'c', input: unsendable };
    const writeFailed = { code: 'DURABLE_EVENT_WRITE_FAILED' };
    await expect(session.startToolCall(call)).rejects.toMatchObject(writeFailed);
    await expect(session.runToolCall(call)).rejects.toMatchObject(writeFailed);
    await expect(session.deliver({ runId: 'r', key: 'k', deliveryId: 'd', payload: unsendable })).rejects.toMatchObject(writeFailed);
    await expect(session.recordDurability({ kind: 'step', scope: 's', key: 'k', result: unsendable })).rejects.toMatchObject(writeFailed);
    const unavailable = { code: 'DURABLE_EVENT_UNAVAILABLE' };
    // SAFETY: deliberately unsendable arguments.
    await expect(session.getRun(unsendable as unknown as string)).rejects.toMatchObject(unavailable);
    await expect(session.readDurability({ after: unsendable as unknown as number })).rejects.toMatchObject(unavailable);
    const store = new DurableObjectEventStore(env.SESSIONS);
    await expect(store.readDurability(sessionId, { after: unsendable as unknown as number })).rejects.toMatchObject(unavailable);
    // Nothing reached the object.
    expect(await session.getRun('r')).toEqual({ runId: 'r', status: 'unknown', toolCalls: [] });
    expect(await store.readDurability(sessionId)).toMatchObject({ records: [], headSequence: null });
  });
});
