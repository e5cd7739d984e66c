/**
 * DurableObjectEventStore's append path inside workerd: drafts validated in the Worker, sent as
 * JSON text to `SessionObject.appendJson`, answered with a compact receipt and rebuilt there.
 * - the rebuilt batch equals what the object stored (read back), for every event type, with and
 *   without `occurredAt`, and what the object's own log answers an append of the same drafts;
 * - invalid drafts are refused in the Worker with the object's own error, and nothing is sent;
 *   drafts the object would only have accepted after structured cloning flattened them (an
 *   accessor in a JSON value) are refused as every other store refuses them;
 * - `appendJson` refuses text that is not JSON, and validates what it parses as the engine does;
 * - a receipt that does not fit its batch is an unknown outcome (`DURABLE_EVENT_WRITE_FAILED`).
 */
import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { appendResultFromReceipt } from '../../src/adapters/durable-object/append-receipt.js';
import { validateDraftBatch } from '../../src/core/log-engine.js';
import type { DurableError } from '../../src/protocol/errors.js';
import { DurableObjectEventStore, sessionObjectRpc } from '../../src/adapters/durable-object/durable-object-store.js';
import type { RpcAppendReceipt } from '../../src/adapters/durable-object/rpc.js';
import type { SqlEventLog } from '../../src/adapters/sql/sql-event-log.js';
import type { DurableEventDraft, DurableEventType } from '../../src/protocol/events.js';
import { RequestId, SessionId } from '../../src/protocol/ids.js';
import { validDrafts } from '../protocol/event-fixtures.js';
import { freshSessionId, markers, stubFor } from './session-object-helpers.js';

const store = new DurableObjectEventStore(env.SESSIONS);
const TYPES = Object.keys(validDrafts) as DurableEventType[];

describe('DurableObjectEventStore.append (receipt path)', () => {
  it('returns exactly the stored envelopes, for every event type', async () => {
    const sessionId = freshSessionId('receipt-all');
    const drafts: DurableEventDraft[] = TYPES.map((type) => validDrafts[type]);
    drafts.push({ ...markers(1, 'dated')[0], occurredAt: '2024-02-29T23:59:59.123Z' } as DurableEventDraft);
    const first = await store.append(sessionId, drafts.slice(0, 5), { expectedLastSequence: null });
    const rest = await store.append(sessionId, drafts.slice(5));
    expect(first.previousSequence).toBeNull();
    expect(rest.previousSequence).toBe(5);
    expect(rest.lastSequence).toBe(drafts.length);
    const page = await store.read(sessionId, { limit: 1000 });
    expect([...first.events, ...rest.events]).toStrictEqual(page.events);
    expect(page.events.at(-1)?.occurredAt).toBe('2024-02-29T23:59:59.123Z');
    expect(page.events[0]?.occurredAt).toBe(page.events[0]?.recordedAt);
  });

  it("answers like the object's own log (objects in, whole result out)", async () => {
    const viaStore = await store.append(freshSessionId('receipt-a'), markers(3, 'same'));
    const sessionId = freshSessionId('receipt-b');
    const inside = await runInDurableObject(stubFor(sessionId), (instance) =>
      // SAFETY: `eventLog` is SessionObject's protected accessor; the test reads it as a subclass would.
      (instance as unknown as { eventLog: SqlEventLog }).eventLog.append(SessionId(sessionId), markers(3, 'same')),
    );
    const strip = (events: readonly object[]) =>
      events.map((event) => ({ ...event, eventId: 'x', sessionId: 'x', recordedAt: 'x', occurredAt: 'x' }));
    expect(strip(viaStore.events)).toStrictEqual(strip(inside.events));
  });

  it("refuses invalid drafts in the Worker with the object's own error, sending nothing", async () => {
    const sessionId = freshSessionId('receipt-invalid');
    const bad = [...markers(1, 'ok'), { type: 'turn_started', requestId: RequestId('r'), data: { turn: 0 } }] as DurableEventDraft[];
    const local = await store.append(sessionId, bad).catch((error: unknown) => error);
    const other = freshSessionId('receipt-invalid-rpc');
    const remote = await sessionObjectRpc(env.SESSIONS, other).appendJson(other, JSON.stringify(bad));
    expect(remote.ok).toBe(false);
    if (!remote.ok) expect(local).toMatchObject({ code: remote.error.code, message: remote.error.message, details: remote.error.details });
    // Nothing reached the object: it is not even bound to the session yet.
    const bound = await runInDurableObject(stubFor(sessionId), (_instance, state) =>
      state.storage.sql.exec("SELECT count(*) AS n FROM ledger_meta WHERE key = 'session_id'").one(),
    );
    expect(bound).toEqual({ n: 0 });
  });

  it('refuses a JSON value with an accessor, as every other store does', async () => {
    const output = { visible: 1 };
    Object.defineProperty(output, 'computed', { get: () => 2, enumerable: true });
    const draft = { type: 'request_completed', requestId: RequestId('r'), data: { output } } as DurableEventDraft;
    await expect(store.append(freshSessionId('receipt-accessor'), [draft])).rejects.toMatchObject({
      code: 'DURABLE_EVENT_INVALID_INPUT',
    });
  });
});

describe('SessionObject.appendJson', () => {
  it('answers a compact receipt', async () => {
    const sessionId = freshSessionId('json-receipt');
    const rpc = sessionObjectRpc(env.SESSIONS, sessionId);
    const result = await rpc.appendJson(sessionId, JSON.stringify(markers(2, 'r')), { expectedLastSequence: null });
    expect(result).toMatchObject({ ok: true, value: { previousSequence: null, lastSequence: 2 } });
    const receipt = (result as { value: RpcAppendReceipt }).value;
    const page = await store.read(sessionId);
    expect(receipt.eventIds).toBe(page.events.map((event) => event.eventId).join('\n'));
    expect(receipt.recordedAt).toBe(page.events[0]?.recordedAt);
  });

  it('refuses text that is not JSON, and drafts that are invalid, as the log engine validates drafts', async () => {
    const sessionId = freshSessionId('json-invalid');
    const rpc = sessionObjectRpc(env.SESSIONS, sessionId);
    expect(await rpc.appendJson(sessionId, '[{"type":')).toMatchObject({ ok: false, error: { code: 'DURABLE_EVENT_INVALID_INPUT' } });
    // SAFETY: deliberately not text.
    expect(await rpc.appendJson(sessionId, markers(1, 'x') as unknown as string)).toMatchObject({
      ok: false,
      error: { code: 'DURABLE_EVENT_INVALID_INPUT' },
    });
    const bad = [{ type: 'request_completed', requestId: 'r', data: { output: 1 }, extra: true }];
    const viaJson = await rpc.appendJson(sessionId, JSON.stringify(bad));
    const local = (() => {
      try {
        return validateDraftBatch(bad);
      } catch (error) {
        return (error as DurableError).toJSON();
      }
    })();
    expect(viaJson).toEqual({ ok: false, error: local });
    expect(await store.getHeadSequence(sessionId)).toBeNull();
  });

  it('remembers the head in the object, and reads it again after a failed commit', async () => {
    const sessionId = freshSessionId('json-memory');
    await store.append(sessionId, markers(2, 'a'));
    const singleWriter = await runInDurableObject(stubFor(sessionId), (instance) => {
      // SAFETY: `eventLog` is SessionObject's protected accessor; the test reads it as a subclass would.
      return (instance as unknown as { eventLog: SqlEventLog }).eventLog.singleWriter;
    });
    expect(singleWriter).toBe(true);
    await expect(store.append(sessionId, markers(1, 'b'), { expectedLastSequence: null })).rejects.toMatchObject({
      code: 'DURABLE_EVENT_SEQUENCE_CONFLICT',
    });
    await expect(store.append(sessionId, markers(1, 'c'))).resolves.toMatchObject({ previousSequence: 2, lastSequence: 3 });
  });
});

describe('appendResultFromReceipt', () => {
  const drafts = markers(2, 'x');
  const good = {
    previousSequence: 4,
    lastSequence: 6,
    eventIds: 'event-5\nevent-6',
    recordedAt: '2025-01-31T12:00:00.000Z',
  };

  it('builds the envelopes planAppend would build', () => {
    const result = appendResultFromReceipt(SessionId('s'), drafts, good);
    expect(result.events.map((event) => [event.sequence, event.eventId, event.occurredAt])).toEqual([
      [5, 'event-5', good.recordedAt],
      [6, 'event-6', good.recordedAt],
    ]);
    expect(Object.keys(result.events[0] ?? {})).toEqual([
      'schemaVersion',
      'eventId',
      'sequence',
      'sessionId',
      'type',
      'requestId',
      'data',
      'recordedAt',
      'occurredAt',
    ]);
  });

  it('treats a receipt that does not fit the batch as an unknown outcome', () => {
    const broken = [
      null,
      { ...good, lastSequence: 7 },
      { ...good, previousSequence: 0 },
      { ...good, eventIds: 'event-5' },
      { ...good, eventIds: ['event-5', 'event-6'] },
      { ...good, eventIds: 'event-5\n' },
      { ...good, recordedAt: 'yesterday' },
    ];
    for (const receipt of broken) {
      expect(() => appendResultFromReceipt(SessionId('s'), drafts, receipt), JSON.stringify(receipt)).toThrow(
        expect.objectContaining({ code: 'DURABLE_EVENT_WRITE_FAILED' }),
      );
    }
  });
});
