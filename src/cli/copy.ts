/**
 * `copy`: a session's events and durability records from one store to another.
 *
 * Events go through `copySessionEvents` (idempotent, resumable, sequences checked, event IDs
 * mapped and verified; see `src/inspector/model/event-copy.ts`). The durability records are copied one by
 * record in record order when both stores have the durability API: `recordDurability` is first-writer-
 * wins by identity, so a rerun finds the records it wrote, and each one read back must equal the
 * source record at the same record sequence. A store without the durability API (the HTTP client) gets
 * the events only, which the report says.
 */
import { isDurabilityRecordStore, type DurabilityRecord, type DurabilityRecordDraft } from '../core/durability/record-contract.js';
import type { DurableEventStore } from '../core/store.js';
import type { SessionId } from '../protocol/ids.js';
import { canonicalJson, type JsonValue } from '../protocol/json.js';
import { copySessionEvents, type CopyProgress } from '../inspector/model/event-copy.js';
import { readDurabilityRecords } from '../inspector/model/inspection.js';
import { CliError } from './output.js';

/** What one session's copy did. */
export interface CopyReport {
  sessionId: string;
  targetSessionId: string;
  verifiedEvents: number;
  appendedEvents: number;
  headSequence: number | null;
  durability: { verified: number; appended: number } | 'unsupported';
}

function draftOfRecord(record: DurabilityRecord): DurabilityRecordDraft {
  const { sequence: _sequence, sessionId: _sessionId, recordedAt: _recordedAt, ...draft } = record;
  // SAFETY: a record minus the store-assigned fields is its draft.
  return draft as DurabilityRecordDraft;
}

/** Copies one session (see the module comment). */
export async function copySession(
  source: DurableEventStore,
  target: DurableEventStore,
  sessionId: SessionId,
  targetSessionId: SessionId,
  onProgress?: (progress: CopyProgress) => void,
  batchSize?: number,
): Promise<CopyReport> {
  const events = await copySessionEvents(source, sessionId, target, targetSessionId, {
    ...(onProgress === undefined ? {} : { onProgress }),
    ...(batchSize === undefined ? {} : { batchSize }),
  });
  let durability: CopyReport['durability'] = 'unsupported';
  if (isDurabilityRecordStore(source) && isDurabilityRecordStore(target)) {
    const records = (await readDurabilityRecords(source, sessionId)) ?? [];
    const existing = (await readDurabilityRecords(target, targetSessionId)) ?? [];
    let verified = 0;
    let appended = 0;
    for (const record of records) {
      const draft = draftOfRecord(record);
      const there = existing[record.sequence - 1];
      if (there !== undefined) {
        // SAFETY: drafts are lossless JSON.
        if (canonicalJson(draftOfRecord(there) as unknown as JsonValue) !== canonicalJson(draft as unknown as JsonValue)) {
          throw new CliError(`the target's durability records differs from the source at record sequence ${record.sequence}; refusing to copy over it`);
        }
        verified += 1;
        continue;
      }
      const result = await target.recordDurability(targetSessionId, draft);
      if (result.record.sequence !== record.sequence) {
        throw new CliError(`durability record ${record.sequence} landed at ${result.record.sequence} in the target: another writer is using it`);
      }
      appended += 1;
    }
    durability = { verified, appended };
  }
  return {
    sessionId,
    targetSessionId,
    verifiedEvents: events.verified,
    appendedEvents: events.appended,
    headSequence: events.headSequence,
    durability,
  };
}
