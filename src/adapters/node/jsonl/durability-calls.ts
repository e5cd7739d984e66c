/**
 * The durability records calls of the JSONL store, as they run under the session lock.
 *
 * `JsonlDurableEventStore` validates the input first (`validateDurabilityDraft`,
 * `planDurabilityRead`), takes the session's process queue and OS lock — the same lock appends
 * and lease changes take, so durability writes serialize with them across processes — and runs:
 * 1. `recordUnderLock`: catch the durability file's indexes up from the file tail, look the draft's
 *    identity up (reading that one record back when it exists), let the core engine decide
 *    (`planDurabilityRecord`), and when the record is new, append its line and fsync before
 *    returning. A caller that aborted before the decision writes nothing.
 * 2. `readUnderLock`: catch up, check the cursor against the head, read one page by offset.
 *    Before taking the lock, `readWithoutLock` serves the page from a cache that still describes
 *    the whole file (validated records never change; see `LineFile.isCurrent`).
 * 3. `durabilityHeadUnderLock`: catch up and return the head (for `watchDurability`).
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

/** A decided record call, plus the durability file and its `ino:size` right after the call (for watchers). */
interface DurabilityRecordOutcome {
  result: DurabilityRecordResult;
  file: string;
  identity: string;
}

/** Catches the durability cache up with the file (awaiting only when there are new bytes). */
async function catchUpDurability(handle: SessionHandle): Promise<void> {
  const reading = handle.durability.catchUp();
  if (reading !== undefined) await reading;
}

/** Under the lock: decides `draft` (validated, with its `durabilityIdentity`) and writes it when new. */
export async function recordUnderLock(
  handle: SessionHandle,
  draft: DurabilityRecordDraft,
  identity: string,
  clock: () => number,
  call: CallState,
): Promise<DurabilityRecordOutcome> {
  await catchUpDurability(handle);
  const { durability } = handle;
  const stored = durability.sequenceOf(identity);
  const existing = stored === undefined ? undefined : await durability.readRecord(stored, identity);
  const result = planDurabilityRecord({ sessionId: handle.id, draft, existing, head: durability.head, nowMs: clock() });
  if (result.created) {
    call.throwIfCancelled();
    durability.appendSync(result.record, identity);
  }
  // The record is a fresh object either way (built from a detached draft, or decoded from the
  // file): nobody else holds a reference into it.
  return { result, file: handle.paths.durability, identity: durability.identity };
}

/** Under the lock: one page of the durability records. */
export async function readUnderLock(handle: SessionHandle, plan: DurabilityReadPlan): Promise<DurabilityReadResult> {
  await catchUpDurability(handle);
  const head = handle.durability.head;
  checkDurabilityCursor(plan.after, head);
  const records = await handle.durability.readPage(plan.after ?? 0, plan.limit);
  return buildDurabilityPage(records, plan, head);
}

/**
 * Without the lock: the page, when this store's cache of the durability file still describes the whole
 * file and the page is small enough for a blocking read; `undefined` otherwise (take the lock).
 */
export function readWithoutLock(handle: SessionHandle, plan: DurabilityReadPlan): DurabilityReadResult | undefined {
  if (!handle.durability.isCurrent()) return undefined;
  handle.users++;
  try {
    const head = handle.durability.head;
    checkDurabilityCursor(plan.after, head);
    const records = handle.durability.readPageSync(plan.after ?? 0, plan.limit);
    return records === undefined ? undefined : buildDurabilityPage(records, plan, head);
  } finally {
    handle.users--;
  }
}

/** Under the lock: the durability head (`null` when empty). */
export async function durabilityHeadUnderLock(handle: SessionHandle): Promise<number | null> {
  await catchUpDurability(handle);
  return handle.durability.head;
}
