/**
 * The durability records engine: every decision a durability backend makes, written once.
 *
 * A backend (a Map, a JSONL file, SQLite rows) calls these functions for the rules:
 * 1. `validateDurabilityDraft` before taking any lock: strict shape, bounded IDs and keys,
 *    integer deadlines, lossless JSON values. It returns a detached copy, so a caller mutating
 *    its draft afterwards cannot change what is stored.
 * 2. Under the backend's lock / inside its transaction, with the record already stored under
 *    the draft's identity (`durabilityIdentity`) and the durability head: `planDurabilityRecord`
 *    returns the existing record (`created: false`), refuses a conflicting delivery, or builds
 *    the next record (sequence `head + 1`, `recordedAt`, byte limit). It performs no I/O.
 * 3. `planDurabilityRead` / `checkDurabilityCursor` / `buildDurabilityPage` validate cursors and
 *    page sizes and shape a page.
 * 4. `parseDurabilityRecord` / `decodeDurabilityRecord` check every record read back; anything
 *    malformed is `DURABILITY_CORRUPT_RECORD` (fail closed, never guess).
 * Validation and parsing live in `record-validation.ts` and are re-exported here, so a backend
 * imports one module.
 */
import { DurabilityError } from '../../protocol/errors.js';
import type { SessionId } from '../../protocol/ids.js';
import { canonicalJson, utf8ByteLength, type JsonValue } from '../../protocol/json.js';
import {
  DEFAULT_DURABILITY_READ_LIMIT,
  MAX_DURABILITY_READ_LIMIT,
  MAX_DURABILITY_RECORD_BYTES,
  type DurabilityReadResult,
  type DurabilityRecord,
  type DurabilityRecordDraft,
  type DurabilityRecordResult,
} from './record-contract.js';

export {
  checkDurabilityKey,
  checkDurabilityScope,
  checkDurabilitySessionId,
  checkDurabilityValue,
  decodeDurabilityRecord,
  describeInvalidDeadline,
  describeInvalidScope,
  parseDurabilityRecord,
  validateDurabilityDraft,
  type DurabilityRecordExpectation,
} from './record-validation.js';

function invalidInput(message: string, details?: Record<string, unknown>): DurabilityError {
  return new DurabilityError('DURABILITY_INVALID_INPUT', message, details === undefined ? undefined : { details });
}

/**
 * The identity under which a record is unique in its session's durability records: `(kind, scope, key)`,
 * or `deliveryId` for deliveries. Backends index (or put a UNIQUE constraint on) this string.
 */
export function durabilityIdentity(draft: DurabilityRecordDraft): string {
  return draft.kind === 'delivery'
    ? JSON.stringify(['delivery', draft.deliveryId])
    : JSON.stringify([draft.kind, draft.scope, draft.key]);
}

/** The mailbox a delivery lands in, and a wait listens to: `(runId, key)`. */
export function deliveryAddress(runId: string, key: string): string {
  return JSON.stringify([runId, key]);
}

/** Canonical storage encoding of a record (sorted keys, no whitespace): one JSONL line or SQL column. */
export function encodeDurabilityRecord(record: DurabilityRecord): string {
  // SAFETY: a record is a JSON object: strings, integers, null and validated JSON values.
  return canonicalJson(record as unknown as JsonValue);
}

/** Inputs of {@link planDurabilityRecord}, gathered under the backend's lock. */
export interface DurabilityPlanInput {
  sessionId: SessionId;
  /** A draft returned by {@link validateDurabilityDraft}. */
  draft: DurabilityRecordDraft;
  /** The record already stored under `durabilityIdentity(draft)`, if any. */
  existing: DurabilityRecord | undefined;
  /** The durability head (`null` when empty). */
  head: number | null;
  nowMs: number;
}

function sameDelivery(a: DurabilityRecordDraft, b: DurabilityRecordDraft): boolean {
  return (
    a.kind === 'delivery' &&
    b.kind === 'delivery' &&
    a.runId === b.runId &&
    a.key === b.key &&
    canonicalJson(a.payload) === canonicalJson(b.payload)
  );
}

/**
 * Decides one `recordDurability`. Pure; throws the public error on refusal. With
 * `created: true` the caller stores `record` (and its identity) and reports it.
 */
export function planDurabilityRecord(input: DurabilityPlanInput): DurabilityRecordResult {
  const { draft, existing } = input;
  if (existing !== undefined) {
    if (draft.kind === 'delivery' && !sameDelivery(draft, existing)) {
      throw new DurabilityError(
        'DURABILITY_CONFLICT',
        `delivery ${draft.deliveryId} was already recorded with a different run, key or payload`,
        { details: { deliveryId: draft.deliveryId, sequence: existing.sequence } },
      );
    }
    return { record: existing, created: false };
  }
  // SAFETY: a draft plus the meta fields is a record of the same kind.
  const record = {
    ...draft,
    sequence: (input.head ?? 0) + 1,
    sessionId: input.sessionId,
    recordedAt: new Date(input.nowMs).toISOString(),
  } as DurabilityRecord;
  const bytes = utf8ByteLength(encodeDurabilityRecord(record));
  if (bytes > MAX_DURABILITY_RECORD_BYTES) {
    throw new DurabilityError(
      'DURABILITY_INVALID_VALUE',
      `the ${draft.kind} record encodes to ${bytes} bytes; the limit is ${MAX_DURABILITY_RECORD_BYTES}`,
      { details: { limit: MAX_DURABILITY_RECORD_BYTES, actual: bytes } },
    );
  }
  return { record, created: true };
}

/** Validated read parameters. */
export interface DurabilityReadPlan {
  after: number | undefined;
  limit: number;
}

/** Validates `after` and `limit` (shape only; {@link checkDurabilityCursor} compares with the head). */
export function planDurabilityRead(options: { after?: unknown; limit?: unknown } | undefined): DurabilityReadPlan {
  const after = options?.after;
  const limit = options?.limit ?? DEFAULT_DURABILITY_READ_LIMIT;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_DURABILITY_READ_LIMIT) {
    throw invalidInput(`limit must be an integer in 1..${MAX_DURABILITY_READ_LIMIT}, got ${String(limit)}`);
  }
  if (after === undefined) return { after: undefined, limit };
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 1) {
    throw invalidInput('after must be undefined or a record sequence >= 1');
  }
  return { after, limit };
}

/** Rejects a cursor ahead of the head instead of serving a silent empty page. */
export function checkDurabilityCursor(after: number | undefined, head: number | null): void {
  if (after !== undefined && (head === null || after > head)) {
    throw invalidInput(`cursor ${after} is ahead of the durability head ${String(head)}`, {
      after,
      headSequence: head,
    });
  }
}

/** Shapes a page from the records the backend loaded (at most `limit`, in order, after `after`). */
export function buildDurabilityPage(
  records: DurabilityRecord[],
  plan: DurabilityReadPlan,
  head: number | null,
): DurabilityReadResult {
  const last = records[records.length - 1];
  const nextCursor = last?.sequence ?? plan.after ?? null;
  return { records, nextCursor, headSequence: head, hasMore: head !== null && (nextCursor ?? 0) < head };
}
