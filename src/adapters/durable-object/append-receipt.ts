/**
 * Compact append receipts: the stored batch without sending it back over RPC.
 *
 * An append result repeats the drafts the caller already holds; only the store-assigned fields
 * are new. So the SessionObject's one append RPC, `appendJson`, answers those fields alone, and
 * every caller (`DurableObjectEventStore`, `sessionClient`, the Worker's append route) appends
 * through {@link appendThroughObject}, which rebuilds the result:
 * 1. it validates the drafts (`validateDraftBatch`) and sends the validated copies as JSON text;
 *    validated drafts are lossless JSON, so the object parses back exactly these drafts and
 *    validates, plans and stores them;
 * 2. the object appends and answers {@link appendReceiptOf} its result: head before, last
 *    sequence, the event IDs (one string), the commit time;
 * 3. {@link appendResultFromReceipt} checks the receipt against the batch and builds each
 *    envelope the way `planAppend` (core `log-engine.ts`) does: store fields first, then the
 *    draft's fields, then `recordedAt`, and `occurredAt` defaulting to `recordedAt`.
 * The conformance harness compares such results with what the store reads back.
 */
import { validateDraftBatch } from '../../core/log-engine.js';
import type { DurableAppendResult } from '../../core/store.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import {
  DURABLE_EVENT_SCHEMA_VERSION,
  isIsoTimestamp,
  type DurableEventDraft,
  type DurableEventEnvelope,
} from '../../protocol/events.js';
import { EventSequence, isValidId, type EventId, type SessionId } from '../../protocol/ids.js';
import { callOperation } from './operation-client.js';
import type { RpcAppendOptions, RpcAppendReceipt } from './rpc.js';

/** Joins the event IDs of a receipt; IDs never contain control characters (`describeInvalidId`). */
const EVENT_ID_SEPARATOR = '\n';

/** The receipt of a committed append (what the object's `appendJson` answers). */
export function appendReceiptOf(result: DurableAppendResult): RpcAppendReceipt {
  return {
    previousSequence: result.previousSequence,
    lastSequence: result.lastSequence,
    eventIds: result.events.map((event) => event.eventId).join(EVENT_ID_SEPARATOR),
    recordedAt: result.events[0]?.recordedAt ?? '',
  };
}

function malformed(problem: string): DurableEventStoreError {
  // The object answered, so the batch was most likely stored; without a usable receipt the
  // caller cannot know what it holds: an unknown outcome, reconciled by reading.
  return new DurableEventStoreError(
    'DURABLE_EVENT_WRITE_FAILED',
    `the session object answered the append with a malformed receipt (${problem}); the batch may have been stored`,
  );
}

/** Checks a receipt against the batch it answers; throws `DURABLE_EVENT_WRITE_FAILED` if it does not fit. */
function checkReceipt(receipt: unknown, count: number): RpcAppendReceipt & { ids: string[] } {
  if (typeof receipt !== 'object' || receipt === null) throw malformed('not an object');
  const r = receipt as Partial<RpcAppendReceipt>;
  const previous = r.previousSequence;
  if (previous !== null && (typeof previous !== 'number' || !Number.isSafeInteger(previous) || previous < 1)) {
    throw malformed('previousSequence');
  }
  if (r.lastSequence !== (previous ?? 0) + count) throw malformed('lastSequence');
  const ids = typeof r.eventIds === 'string' ? r.eventIds.split(EVENT_ID_SEPARATOR) : [];
  if (ids.length !== count || !ids.every((id) => isValidId(id))) throw malformed('eventIds');
  if (!isIsoTimestamp(r.recordedAt)) throw malformed('recordedAt');
  // SAFETY: every field was checked just above.
  return { ...(receipt as RpcAppendReceipt), ids };
}

/**
 * The append result the store built for `drafts`, rebuilt from its receipt. `drafts` must be the
 * validated drafts that were sent (see the module header).
 */
export function appendResultFromReceipt(
  sessionId: SessionId,
  drafts: readonly DurableEventDraft[],
  receipt: unknown,
): DurableAppendResult {
  const { previousSequence, lastSequence, ids, recordedAt } = checkReceipt(receipt, drafts.length);
  const base = previousSequence ?? 0;
  const events = drafts.map((draft, index) => {
    const { occurredAt, ...rest } = draft;
    // SAFETY: as in planAppend: adding the store fields to a validated draft keeps its discriminant.
    return {
      schemaVersion: DURABLE_EVENT_SCHEMA_VERSION,
      eventId: ids[index] as EventId,
      sequence: EventSequence(base + index + 1),
      sessionId,
      ...rest,
      recordedAt,
      occurredAt: occurredAt ?? recordedAt,
    } as DurableEventEnvelope;
  });
  return { previousSequence, lastSequence, events };
}

/**
 * Appends `drafts` to the session of the object `stub` through its `appendJson` row (see the
 * module header). Invalid drafts are refused here with the object's own error, and nothing is
 * sent; a call whose answer is lost is `DURABLE_EVENT_WRITE_FAILED` (the batch may or may not
 * have committed: read the head before retrying).
 */
export async function appendThroughObject(
  stub: object,
  sessionId: SessionId,
  drafts: readonly DurableEventDraft[],
  options: RpcAppendOptions = {},
  signal?: AbortSignal,
): Promise<DurableAppendResult> {
  const valid = validateDraftBatch(drafts);
  const receipt = await callOperation(stub, sessionId, 'appendJson', { draftsJson: JSON.stringify(valid), options }, signal);
  return appendResultFromReceipt(sessionId, valid, receipt);
}
