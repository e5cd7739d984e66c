/**
 * Projection checkpoint checks, for stores that implement `DurableCheckpointStore` (requirement
 * `checkpoint`; see `docs/checkpoints.md`).
 *
 * - The store hands back the latest record byte for byte, per session, and refuses bad input.
 * - A journal opens from a valid checkpoint (outcome `used`) with the same projection and plan
 *   as a full fold, and command IDs from before it still replay.
 * - A stale (other projector version), foreign (other session), corrupt, replaced-log (other
 *   event at its sequence) or ahead-of-head (a log restored from an older backup) checkpoint is
 *   discarded, and the journal still opens with exactly the full fold's state.
 * - A checkpoint written by a journal that opened from an earlier one passes the audit of
 *   `agent-ledger verify` (digest, fold state, commands, ID filter equal to a fold from event 1).
 * - With `restart`: the checkpoint survives a reopen.
 */
import { auditStoredCheckpoint } from '../core/checkpoint/audit.js';
import { decodeCheckpoint, encodeCheckpoint, type DecodedCheckpoint } from '../core/checkpoint/codec.js';
import { isCheckpointStore, type DurableCheckpointStore } from '../core/checkpoint/contract.js';
import { DurableSessionJournal } from '../core/journal/journal.js';
import type { DurableCommandEventDraft } from '../core/journal/journal-options.js';
import type { DurableEventStore } from '../core/store.js';
import { CommandId, EventId, EventSequence, type SessionId } from '../protocol/ids.js';
import { assert, assertDeepEqual, assertEqual, expectCode, fail } from './assertions.js';
import { lifecycleDrafts as d } from './checks-journal.js';
import type { ConformanceCheck, ConformanceContext } from './types.js';

type Check = ConformanceCheck<DurableEventStore>;

function checkpointStoreOf(store: DurableEventStore): DurableCheckpointStore {
  if (!isCheckpointStore(store)) fail('the store does not implement DurableCheckpointStore');
  return store;
}

function cycle(index: number): DurableCommandEventDraft[] {
  const r = `cp-request-${index}`;
  return [d.requestAccepted(r), d.requestStarted(r), d.turnStarted(r, `cp-turn-${index}`, 1), d.turnCompleted(r, `cp-turn-${index}`, 1), d.requestCompleted(r)];
}

/** A session of `1 + 5 * cycles` events written by a journal, ending with an open Request when `open`. */
async function buildSession(store: DurableEventStore, sessionId: SessionId, cycles: number, open = true): Promise<void> {
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: false });
  await journal.commit({ commandId: CommandId(`${sessionId}-create`), events: [d.sessionCreated()] });
  for (let index = 0; index < cycles; index++) {
    await journal.commit({ commandId: CommandId(`cp-cmd-${index}`), events: cycle(index) });
  }
  if (open) await journal.commit({ commandId: CommandId('cp-open'), events: [d.requestAccepted('cp-open-request')] });
}

/** Writes a checkpoint at the current head through a journal; returns its decoded form. */
async function checkpointAtHead(store: DurableEventStore, sessionId: SessionId): Promise<DecodedCheckpoint> {
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { read: false } });
  assertEqual(await journal.writeCheckpoint(), true, 'writeCheckpoint()');
  const record = await checkpointStoreOf(store).readCheckpoint(sessionId);
  if (record === null) fail('readCheckpoint returned null right after a checkpoint was written');
  const decoded = decodeCheckpoint(record);
  if (typeof decoded === 'string') fail(`the stored checkpoint does not decode: ${decoded}`);
  assertEqual(decoded.sequence, journal.getHeadSequence(), 'checkpoint sequence');
  return decoded;
}

/** Opens with and without checkpoints; asserts equal results and returns the outcome. */
async function openBothWays(ctx: ConformanceContext, sessionId: SessionId) {
  const full = await DurableSessionJournal.open(ctx.store, sessionId, { checkpoints: false });
  const fromCheckpoint = await DurableSessionJournal.open(ctx.store, sessionId, { checkpoints: { write: false } });
  assertDeepEqual(fromCheckpoint.getProjection(), full.getProjection(), 'projection from the checkpoint vs a full fold');
  assertDeepEqual(fromCheckpoint.getRecoveryPlan(), full.getRecoveryPlan(), 'recovery plan from the checkpoint vs a full fold');
  return fromCheckpoint.getCheckpointOutcome();
}

async function expectDiscarded(ctx: ConformanceContext, sessionId: SessionId, reason: string): Promise<void> {
  const outcome = await openBothWays(ctx, sessionId);
  if (outcome.status !== 'discarded' || !outcome.reason.startsWith(reason)) {
    fail(`expected the checkpoint to be discarded as "${reason}", got ${JSON.stringify(outcome)}`);
  }
}

const roundTrip: Check = {
  name: 'checkpoint-store-round-trip',
  requires: ['checkpoint'],
  async run(ctx) {
    const store = checkpointStoreOf(ctx.store);
    const a = ctx.newSessionId();
    const b = ctx.newSessionId();
    await ctx.store.append(a, [{ type: 'session_created', data: {} }]);
    assertEqual(await store.readCheckpoint(a), null, 'readCheckpoint before any write');
    const bytes = new Uint8Array(3 * 1024 * 1024 + 17).map((_, index) => (index * 31) & 0xff);
    await store.writeCheckpoint(a, { sequence: EventSequence(1), eventId: EventId('e-1'), data: bytes });
    const first = await store.readCheckpoint(a);
    assertEqual(first?.sequence, 1, 'sequence read back');
    assertEqual(first?.eventId, 'e-1', 'eventId read back');
    assert(first !== null && first.data.length === bytes.length && first.data.every((v, i) => v === bytes[i]), 'bytes read back identical');
    await store.writeCheckpoint(a, { sequence: EventSequence(1), eventId: EventId('e-2'), data: new Uint8Array([1, 2, 3]) });
    const second = await store.readCheckpoint(a);
    assertEqual(second?.eventId, 'e-2', 'the latest write wins');
    assertDeepEqual([...(second?.data ?? [])], [1, 2, 3], 'bytes of the latest write');
    assertEqual(await store.readCheckpoint(b), null, 'another session has no checkpoint');
    await expectCode(
      store.writeCheckpoint(a, { sequence: 0 as EventSequence, eventId: EventId('e-3'), data: new Uint8Array(1) }),
      'DURABLE_EVENT_INVALID_INPUT',
      'a checkpoint at sequence 0',
    );
    await expectCode(
      // SAFETY: deliberately malformed input.
      store.writeCheckpoint(a, { sequence: EventSequence(1), eventId: EventId('e-3'), data: 'text' as unknown as Uint8Array }),
      'DURABLE_EVENT_INVALID_INPUT',
      'checkpoint data that is not bytes',
    );
    assertEqual((await store.readCheckpoint(a))?.eventId, 'e-2', 'a refused write changes nothing');
  },
};

/**
 * A record that says it extends the stored one (`extendsBytes`) reads back exactly as written,
 * whether the store keeps extensions (`checkpointExtension`) or writes every record whole, and
 * also when the stored record is not the prefix the writer claims.
 */
const extension: Check = {
  name: 'checkpoint-store-extension',
  requires: ['checkpoint'],
  async run(ctx) {
    const store = checkpointStoreOf(ctx.store);
    const a = ctx.newSessionId();
    await ctx.store.append(a, [{ type: 'session_created', data: {} }]);
    const fill = (length: number, seed: number) => new Uint8Array(length).map((_, index) => (index * 31 + seed) & 0xff);
    const concat = (head: Uint8Array, tail: Uint8Array) => {
      const out = new Uint8Array(head.length + tail.length);
      out.set(head);
      out.set(tail, head.length);
      return out;
    };
    const same = (actual: Uint8Array | undefined, expected: Uint8Array) =>
      actual !== undefined && actual.length === expected.length && actual.every((value, index) => value === expected[index]);
    const base = fill(64 * 1024, 1);
    await store.writeCheckpoint(a, { sequence: EventSequence(1), eventId: EventId('x-1'), data: base });
    const extended = concat(base, fill(1000, 2));
    await store.writeCheckpoint(a, { sequence: EventSequence(1), eventId: EventId('x-2'), data: extended, extendsBytes: base.length });
    let read = await store.readCheckpoint(a);
    assert(same(read?.data, extended), 'an extension reads back as the whole record');
    assertEqual(read?.eventId, 'x-2', 'the position of the extension');
    assertEqual((read as { extendsBytes?: unknown } | null)?.extendsBytes, undefined, 'reads carry no extendsBytes');
    const twice = concat(extended, fill(24, 3));
    await store.writeCheckpoint(a, { sequence: EventSequence(1), eventId: EventId('x-3'), data: twice, extendsBytes: extended.length - (extended.length % 8) });
    assert(same((await store.readCheckpoint(a))?.data, twice), 'a second extension reads back whole');
    // A claimed prefix the store does not hold: the record is written whole.
    const foreign = concat(fill(4096, 9), fill(104, 4));
    await store.writeCheckpoint(a, { sequence: EventSequence(1), eventId: EventId('x-4'), data: foreign, extendsBytes: 4096 });
    read = await store.readCheckpoint(a);
    assert(same(read?.data, foreign), 'an extension of a record the store does not hold reads back whole');
    assertEqual(read?.eventId, 'x-4', 'its position');
    const longer = concat(foreign, fill(64, 5));
    await store.writeCheckpoint(a, { sequence: EventSequence(1), eventId: EventId('x-5'), data: longer, extendsBytes: foreign.length + 8 });
    assert(same((await store.readCheckpoint(a))?.data, longer), 'an extension claiming more than the stored record reads back whole');
    for (const extendsBytes of [12, 0, longer.length, longer.length + 8, 1.5]) {
      await expectCode(
        store.writeCheckpoint(a, { sequence: EventSequence(1), eventId: EventId('x-6'), data: longer, extendsBytes }),
        'DURABLE_EVENT_INVALID_INPUT',
        `extendsBytes ${extendsBytes}`,
      );
    }
    assertEqual((await store.readCheckpoint(a))?.eventId, 'x-5', 'a refused extension changes nothing');
  },
};

const usedOnOpen: Check = {
  name: 'checkpoint-used-on-open',
  requires: ['checkpoint'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await buildSession(ctx.store, sessionId, 6);
    const decoded = await checkpointAtHead(ctx.store, sessionId);
    const journal = await DurableSessionJournal.open(ctx.store, sessionId, { checkpoints: { write: false } });
    await journal.commit({ commandId: CommandId('cp-after'), events: [d.requestStarted('cp-open-request')] });
    const outcome = await openBothWays(ctx, sessionId);
    assertDeepEqual(outcome, { status: 'used', sequence: decoded.sequence }, 'checkpoint outcome on open');
    // A command from before the checkpoint still replays.
    const reopened = await DurableSessionJournal.open(ctx.store, sessionId, { checkpoints: { write: false } });
    const replay = await reopened.commit({ commandId: CommandId('cp-cmd-2'), events: cycle(2) });
    assertEqual(replay.status, 'replayed', 'an old command resubmitted after a checkpoint');
  },
};

const auditMatches: Check = {
  name: 'checkpoint-audit-matches-fold',
  requires: ['checkpoint'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await buildSession(ctx.store, sessionId, 6);
    await checkpointAtHead(ctx.store, sessionId);
    // A journal that opened from that checkpoint writes the next one (an extension where the
    // store keeps them): its digest, state, commands and ID filter must equal a fold from event 1.
    const continued = await DurableSessionJournal.open(ctx.store, sessionId, {});
    assertEqual(continued.getCheckpointOutcome().status, 'used', 'the second writer opens from the checkpoint');
    await continued.commit({ commandId: CommandId('cp-after'), events: [d.requestStarted('cp-open-request')] });
    await continued.commit({ commandId: CommandId('cp-cmd-9'), events: [d.turnStarted('cp-open-request', 'cp-turn-9', 1)] });
    assertEqual(await continued.writeCheckpoint(), true, 'writeCheckpoint() after the reopen');
    const audit = await auditStoredCheckpoint(ctx.store, sessionId);
    assertDeepEqual(audit, { sequence: continued.getHeadSequence(), status: 'matches', defects: [], notes: [] }, 'audit of the second checkpoint');
  },
};

const restartKeeps: Check = {
  name: 'checkpoint-survives-restart',
  requires: ['checkpoint', 'restart'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await buildSession(ctx.store, sessionId, 3);
    const decoded = await checkpointAtHead(ctx.store, sessionId);
    await ctx.restart();
    assertDeepEqual(await openBothWays(ctx, sessionId), { status: 'used', sequence: decoded.sequence }, 'outcome after restart');
  },
};

const stale: Check = {
  name: 'checkpoint-stale-projector-version',
  requires: ['checkpoint'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await buildSession(ctx.store, sessionId, 3);
    const decoded = await checkpointAtHead(ctx.store, sessionId);
    await checkpointStoreOf(ctx.store).writeCheckpoint(sessionId, encodeCheckpoint({ ...decoded, projectorVersion: decoded.projectorVersion + 1 }));
    await expectDiscarded(ctx, sessionId, 'stale');
  },
};

const foreign: Check = {
  name: 'checkpoint-foreign-session',
  requires: ['checkpoint'],
  async run(ctx) {
    const a = ctx.newSessionId();
    const b = ctx.newSessionId();
    await buildSession(ctx.store, a, 3);
    await buildSession(ctx.store, b, 3);
    const decoded = await checkpointAtHead(ctx.store, a);
    await checkpointStoreOf(ctx.store).writeCheckpoint(b, encodeCheckpoint(decoded));
    await expectDiscarded(ctx, b, 'foreign');
  },
};

const corrupt: Check = {
  name: 'checkpoint-corrupt-bytes',
  requires: ['checkpoint'],
  async run(ctx) {
    const sessionId = ctx.newSessionId();
    await buildSession(ctx.store, sessionId, 3);
    await checkpointAtHead(ctx.store, sessionId);
    const store = checkpointStoreOf(ctx.store);
    const record = await store.readCheckpoint(sessionId);
    if (record === null) fail('no checkpoint to corrupt');
    const data = record.data.slice();
    const middle = Math.floor(data.length / 2);
    data[middle] = ((data[middle] ?? 0) ^ 0x5a) & 0xff;
    await store.writeCheckpoint(sessionId, { ...record, data });
    await expectDiscarded(ctx, sessionId, 'corrupt');
    await store.writeCheckpoint(sessionId, { ...record, data: record.data.subarray(0, record.data.length - 9) });
    await expectDiscarded(ctx, sessionId, 'corrupt');
  },
};

const replacedLog: Check = {
  name: 'checkpoint-replaced-log',
  requires: ['checkpoint'],
  async run(ctx) {
    // The same commands in another session give other event IDs: its checkpoint, relabelled for
    // this session, is what a checkpoint next to a replaced log looks like.
    const original = ctx.newSessionId();
    const replaced = ctx.newSessionId();
    await buildSession(ctx.store, original, 3);
    await buildSession(ctx.store, replaced, 3);
    const decoded = await checkpointAtHead(ctx.store, original);
    await checkpointStoreOf(ctx.store).writeCheckpoint(replaced, encodeCheckpoint({ ...decoded, sessionId: replaced }));
    await expectDiscarded(ctx, replaced, 'replaced log');
  },
};

const aheadOfHead: Check = {
  name: 'checkpoint-ahead-of-head',
  requires: ['checkpoint'],
  async run(ctx) {
    // A log restored from an older backup next to a newer checkpoint: the checkpoint stands at a
    // sequence the log does not have (yet).
    const longer = ctx.newSessionId();
    const restored = ctx.newSessionId();
    await buildSession(ctx.store, longer, 5);
    await buildSession(ctx.store, restored, 2);
    const decoded = await checkpointAtHead(ctx.store, longer);
    await checkpointStoreOf(ctx.store).writeCheckpoint(restored, encodeCheckpoint({ ...decoded, sessionId: restored }));
    await expectDiscarded(ctx, restored, 'ahead of the head');
    // ...and the log keeps growing past it: the checkpoint is still not trusted (other events).
    const journal = await DurableSessionJournal.open(ctx.store, restored, { checkpoints: false });
    for (let index = 10; journal.getHeadSequence()! <= decoded.sequence; index++) {
      await journal.commit({ commandId: CommandId(`cp-grow-${index}`), events: [d.inputApplied('cp-open-request', `cp-input-${index}`)] });
    }
    await expectDiscarded(ctx, restored, 'replaced log');
  },
};

/** Every checkpoint check. */
export const checkpointChecks: readonly Check[] = Object.freeze([
  roundTrip,
  extension,
  usedOnOpen,
  auditMatches,
  restartKeeps,
  stale,
  foreign,
  corrupt,
  replacedLog,
  aheadOfHead,
]);
