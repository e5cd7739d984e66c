/**
 * The durability ledger calls of the JSONL store, as they run under the session lock.
 *
 * `JsonlDurableEventStore` validates the input first (`validateDurabilityDraft`,
 * `planDurabilityRead`), takes the session's process queue and OS lock — the same lock appends
 * and lease changes take, so ledger writes serialize with them across processes — and runs:
 * 1. `recordUnderLock`: catch the ledger's indexes up from the file tail, look the draft's
 *    identity up (reading that one record back when it exists), let the core engine decide
 *    (`planDurabilityRecord`), and when the record is new, append its line and fsync before
 *    returning. A caller that aborted before the decision writes nothing.
 * 2. `readUnderLock`: catch up, check the cursor against the head, read one page by offset.
 *    Before taking the lock, `readWithoutLock` serves the page from a cache that still describes
 *    the whole file (validated records never change; see `LineFile.isCurrent`).
 * 3. `ledgerHeadUnderLock`: catch up and return the head (for `watchDurability`).
 * The store notifies `watchDurability` listeners after the lock is released.
 */
import type {
  DurabilityReadResult,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../../core/durability/record-contract.js';
import {
  buildDurabilityPage,
  checkDurabilityCursor,
  planDurabilityRecord,
  type DurabilityReadPlan,
} from '../../../core/durability/record-engine.js';
import type { CallState } from './bounded-call.js';
import type { SessionHandle } from './session-handle.js';

/** A decided record call, plus the ledger file and its `ino:size` right after the call (for watchers). */
interface LedgerRecordOutcome {
  result: DurabilityRecordResult;
  file: string;
  identity: string;
}

/** Catches the ledger cache up with the file (awaiting only when there are new bytes). */
async function catchUpLedger(handle: SessionHandle): Promise<void> {
  const reading = handle.ledger.catchUp();
  if (reading !== undefined) await reading;
}

/** Under the lock: decides `draft` (validated, with its `durabilityIdentity`) and writes it when new. */
export async function recordUnderLock(
  handle: SessionHandle,
  draft: DurabilityRecordDraft,
  identity: string,
  clock: () => number,
  call: CallState,
): Promise<LedgerRecordOutcome> {
  await catchUpLedger(handle);
  const { ledger } = handle;
  const stored = ledger.sequenceOf(identity);
  const existing = stored === undefined ? undefined : await ledger.readRecord(stored, identity);
  const result = planDurabilityRecord({ sessionId: handle.id, draft, existing, head: ledger.head, nowMs: clock() });
  if (result.created) {
    call.throwIfCancelled();
    ledger.appendSync(result.record, identity);
  }
  // The record is a fresh object either way (built from a detached draft, or decoded from the
  // file): nobody else holds a reference into it.
  return { result, file: handle.paths.ledger, identity: ledger.identity };
}

/** Under the lock: one page of the ledger. */
export async function readUnderLock(handle: SessionHandle, plan: DurabilityReadPlan): Promise<DurabilityReadResult> {
  await catchUpLedger(handle);
  const head = handle.ledger.head;
  checkDurabilityCursor(plan.after, head);
  const records = await handle.ledger.readPage(plan.after ?? 0, plan.limit);
  return buildDurabilityPage(records, plan, head);
}

/**
 * Without the lock: the page, when this store's cache of the ledger still describes the whole
 * file and the page is small enough for a blocking read; `undefined` otherwise (take the lock).
 */
export function readWithoutLock(handle: SessionHandle, plan: DurabilityReadPlan): DurabilityReadResult | undefined {
  if (!handle.ledger.isCurrent()) return undefined;
  handle.users++;
  try {
    const head = handle.ledger.head;
    checkDurabilityCursor(plan.after, head);
    const records = handle.ledger.readPageSync(plan.after ?? 0, plan.limit);
    return records === undefined ? undefined : buildDurabilityPage(records, plan, head);
  } finally {
    handle.users--;
  }
}

/** Under the lock: the ledger head (`null` when empty). */
export async function ledgerHeadUnderLock(handle: SessionHandle): Promise<number | null> {
  await catchUpLedger(handle);
  return handle.ledger.head;
}
