/**
 * The checkpoint audit of `agent-ledger verify` (`core/checkpoint/audit.ts`), on a real store:
 * a checkpoint written by a journal matches its log; each way a record can lie while an open would
 * still trust it (digest, fold state, command index, ID filter) is a defect naming the checkpoint;
 * one an open discards because the log differs from it (another event at its sequence, a log that
 * ends before it) is discarded and a defect of the log; one discarded whatever the log holds is a
 * note.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { verifyThroughStore, type VerifyReport } from '../../src/cli/verify.js';
import { decodeCheckpoint, encodeCheckpoint, type DecodedCheckpoint } from '../../src/core/checkpoint/codec.js';
import { HashedKeyFilter } from '../../src/core/projector/key-filter.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { CommandId, EventId, EventSequence, SessionId } from '../../src/protocol/ids.js';
import { appendCycles, cycleDrafts } from './lifecycle-log.js';

const sessionId = SessionId('audited');

/** A store holding 8 lifecycle cycles, a checkpoint after the 5th, and the checkpoint decoded. */
async function sessionWithCheckpoint(): Promise<{ store: MemoryDurableEventStore; decoded: DecodedCheckpoint }> {
  const store = new MemoryDurableEventStore();
  await appendCycles(store, sessionId, 0, 0);
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 1_000_000 } });
  const commit = async (index: number): Promise<void> => {
    const outcome = await journal.commit({
      commandId: CommandId(`cycle-${index}`),
      events: cycleDrafts(index).map(({ commandId: _omitted, ...draft }) => draft),
    });
    expect(outcome.status).toBe('committed');
  };
  for (let index = 0; index < 5; index++) await commit(index);
  expect(await journal.writeCheckpoint()).toBe(true);
  for (let index = 5; index < 8; index++) await commit(index);
  const record = await store.readCheckpoint(sessionId);
  const decoded = record === null ? 'none' : decodeCheckpoint(record);
  if (typeof decoded === 'string') throw new Error(`no usable checkpoint: ${decoded}`);
  return { store, decoded };
}

async function verify(store: MemoryDurableEventStore): Promise<VerifyReport> {
  const report: VerifyReport = { sessionId, events: 0, durabilityRecords: null, defects: [], notes: [] };
  await verifyThroughStore(store, sessionId, report);
  return report;
}

/** Replaces the stored checkpoint with `decoded` changed by `change`, re-encoded with valid checksums. */
async function rewrite(store: MemoryDurableEventStore, decoded: DecodedCheckpoint, change: Partial<DecodedCheckpoint>): Promise<void> {
  const { extent: _extent, ...rest } = decoded;
  await store.writeCheckpoint(sessionId, encodeCheckpoint({ ...rest, ...change }));
}

describe('checkpoint audit (verify)', () => {
  it('a checkpoint a journal wrote matches its log', async () => {
    const { store, decoded } = await sessionWithCheckpoint();
    const report = await verify(store);
    expect(report.defects).toEqual([]);
    expect(report.checkpoint).toEqual({ sequence: decoded.sequence, status: 'matches' });
    expect(report.notes.join('\n')).toContain(`checkpoint at sequence ${decoded.sequence} matches the log`);
  });

  it('a digest that does not chain to the prefix is a defect, though the anchor matches', async () => {
    const { store, decoded } = await sessionWithCheckpoint();
    await rewrite(store, decoded, { digest: { h1: (decoded.digest.h1 ^ 1) >>> 0, h2: decoded.digest.h2 } });
    const report = await verify(store);
    expect(report.checkpoint).toEqual({ sequence: decoded.sequence, status: 'wrong' });
    expect(report.defects).toHaveLength(1);
    expect(report.defects[0]).toMatchObject({ where: `checkpoint at sequence ${decoded.sequence}`, sequence: decoded.sequence });
    expect(report.defects[0]?.message).toMatch(/digest mismatch/);
    expect(report.notes.join('\n')).toContain(`agent-ledger checkpoint <store> ${sessionId} --rebuild`);
    // The open check alone trusts it: that is what the audit is for.
    const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { write: false } });
    expect(journal.getCheckpointOutcome()).toEqual({ status: 'used', sequence: decoded.sequence });
  });

  it('a fold state, command index or ID filter that differs from the fold is a defect', async () => {
    const { store, decoded } = await sessionWithCheckpoint();
    await rewrite(store, decoded, { state: { ...decoded.state, completedRequests: decoded.state.completedRequests + 1 } });
    expect((await verify(store)).defects.map((defect) => defect.message)).toEqual([expect.stringMatching(/fold state .* differs/)]);

    await rewrite(store, decoded, { commands: { ...decoded.commands, ranges: decoded.commands.ranges.slice(0, -1) } });
    expect((await verify(store)).defects.map((defect) => defect.message)).toEqual([expect.stringMatching(/command index .* differs/)]);

    const hashes = decoded.keys.runs.flatMap((run) => {
      // A record this small holds plain runs (compact ones start at 262,144 hashes).
      if (!(run instanceof Float64Array)) throw new Error('expected a plain run');
      return Array.from(run);
    });
    const fewer = HashedKeyFilter.fromSorted(Float64Array.from(hashes.slice(1)).sort());
    if (fewer === null) throw new Error('not sorted');
    await rewrite(store, decoded, { keys: fewer });
    const missing = await verify(store);
    expect(missing.checkpoint?.status).toBe('wrong');
    expect(missing.defects.map((defect) => defect.message)).toEqual([expect.stringMatching(/ID filter .* lacks 1 ID/)]);
  });

  it('a checkpoint an open discards because the log differs from it is discarded, and a defect of the log', async () => {
    const { store, decoded } = await sessionWithCheckpoint();
    const at = `checkpoint at sequence ${decoded.sequence}`;
    await rewrite(store, decoded, { anchor: decoded.anchor + 1 });
    const changed = await verify(store);
    expect(changed.checkpoint).toEqual({ sequence: decoded.sequence, status: 'discarded' });
    expect(changed.defects).toEqual([
      { where: at, sequence: decoded.sequence, message: `the log is not the one the checkpoint was written from: event ${decoded.sequence} (${decoded.eventId}) was changed after the checkpoint was written` },
    ]);
    expect(changed.notes.join('\n')).toMatch(/replaced log/);

    await rewrite(store, decoded, { eventId: EventId('evt-elsewhere') });
    const replaced = await verify(store);
    expect(replaced.checkpoint).toEqual({ sequence: decoded.sequence, status: 'discarded' });
    expect(replaced.defects.map((defect) => defect.message)).toEqual([
      `the log is not the one the checkpoint was written from: event ${decoded.sequence} is ${decoded.eventId}, not evt-elsewhere: events were added, removed or replaced at or before sequence ${decoded.sequence}`,
    ]);

    await rewrite(store, decoded, { sequence: EventSequence(1000) });
    const ahead = await verify(store);
    expect(ahead.checkpoint).toEqual({ sequence: 1000, status: 'discarded' });
    expect(ahead.defects.map((defect) => defect.message)).toEqual([
      `the log ends at sequence ${ahead.events}, but the checkpoint was written after event 1000: events ${ahead.events + 1}-1000 were removed (or the log is an older copy)`,
    ]);
    expect(ahead.notes.join('\n')).toMatch(/beyond the head/);
  });

  it('a checkpoint an open discards whatever the log holds is a note, not a defect', async () => {
    const { store, decoded } = await sessionWithCheckpoint();
    await rewrite(store, decoded, { projectorVersion: decoded.projectorVersion + 1 });
    const stale = await verify(store);
    expect(stale.defects).toEqual([]);
    expect(stale.checkpoint?.status).toBe('discarded');
    expect(stale.notes.join('\n')).toMatch(/projector version/);

    await store.writeCheckpoint(sessionId, { sequence: decoded.sequence, eventId: decoded.eventId, data: new Uint8Array(64) });
    const corrupt = await verify(store);
    expect(corrupt.defects).toEqual([]);
    expect(corrupt.checkpoint?.status).toBe('discarded');
    expect(corrupt.notes.join('\n')).toMatch(/unusable/);
  });

  it('a store without a checkpoint reports none', async () => {
    const store = new MemoryDurableEventStore();
    await appendCycles(store, sessionId, 0, 1);
    const report = await verify(store);
    expect(report.defects).toEqual([]);
    expect(report.checkpoint).toBeUndefined();
  });
});
