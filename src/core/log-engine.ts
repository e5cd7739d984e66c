/**
 * The log engine: every decision a store makes, written once.
 *
 * Adapters own bytes (a Map, a JSONL file, SQLite rows); they call these functions for the rules:
 * 1. `validateDraftBatch` before taking any lock: count limit, strict schema per draft. A batch
 *    with one bad draft throws and nothing is written.
 * 2. Under the adapter's lock / inside its transaction, with the current head and lease state:
 *    `planAppend` checks the lease fence and the compare-and-append precondition, assigns
 *    contiguous sequences, store event IDs and timestamps, checks byte limits, and returns the
 *    envelopes to write. It never performs I/O, so SQL adapters run it inside one synchronous
 *    transaction with nothing awaited between the read and the conditional write.
 * 3. `planRead` / `buildReadPage` validate cursors and page sizes and shape the page.
 * 4. `decideAcquire` / `decideRenew` / `decideRelease` / `checkFence` implement leases with
 *    monotonic fencing tokens and sticky fencing.
 */
import {
  DurableEventSequenceConflictError,
  DurableEventStoreError,
  DurableExecutionLeaseError,
} from '../protocol/errors.js';
import {
  DURABLE_EVENT_SCHEMA_VERSION,
  parseDurableEventDraft,
  type DurableEventDraft,
  type DurableEventEnvelope,
} from '../protocol/events.js';
import { fastParseDraftBatch } from '../protocol/draft-fast-path.js';
import { utf8ByteLength } from '../protocol/json.js';
import {
  EventId,
  EventSequence,
  FencingToken,
  describeInvalidId,
  type SessionId,
  type WorkerId,
} from '../protocol/ids.js';
import {
  DEFAULT_READ_LIMIT,
  MAX_BATCH_BYTES,
  MAX_BATCH_EVENTS,
  MAX_EVENT_BYTES,
  MAX_LEASE_TTL_MS,
  MAX_READ_LIMIT,
  MAX_READ_PAGE_BYTES,
  MIN_LEASE_TTL_MS,
} from '../protocol/limits.js';
import type {
  DurableAppendOptions,
  DurableAppendResult,
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableReadResult,
} from './store.js';

export { MIN_LEASE_TTL_MS, MAX_LEASE_TTL_MS } from '../protocol/limits.js';

/** Lease state as adapters persist it (JSON-safe, no brands needed at rest). */
export interface LeaseState {
  leaseId: string;
  ownerId: WorkerId;
  fencingToken: FencingToken;
  acquiredAtMs: number;
  expiresAtMs: number;
  released: boolean;
}

function invalidInput(message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', message);
}

/** Validates the session ID argument of a store call. */
export function checkSessionId(sessionId: unknown): SessionId {
  const problem = describeInvalidId(sessionId);
  if (problem !== undefined) throw invalidInput(`sessionId ${problem}`);
  // SAFETY: validated just above.
  return sessionId as SessionId;
}

/**
 * Strictly validates a whole batch of drafts; throws on the first bad one (nothing is written).
 * The common valid batch is accepted by the zod-free fast path (`protocol/draft-fast-path.ts`,
 * proven equal to zod by a differential property test); anything it declines goes through
 * {@link validateDraftBatchStrict}, whose errors are therefore the only ones callers see.
 */
export function validateDraftBatch(drafts: unknown): DurableEventDraft[] {
  return fastParseDraftBatch(drafts, 'any') ?? validateDraftBatchStrict(drafts);
}

/**
 * Parses and validates a batch sent as JSON text (an array of drafts): {@link validateDraftBatch}
 * of `JSON.parse(text)`, with the cheaper checks that parsed JSON allows. Text that is not JSON is
 * `DURABLE_EVENT_INVALID_INPUT`.
 */
export function parseDraftBatchJson(text: unknown): DurableEventDraft[] {
  if (typeof text !== 'string') throw invalidInput('events must be sent as JSON text');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'events are not valid JSON', { cause: error });
  }
  return fastParseDraftBatch(parsed, 'parsed') ?? validateDraftBatchStrict(parsed);
}

/** The reference validator: every draft through its zod schema. */
export function validateDraftBatchStrict(drafts: unknown): DurableEventDraft[] {
  if (!Array.isArray(drafts)) throw invalidInput('events must be an array of drafts');
  if (drafts.length === 0) throw invalidInput('an append needs at least one event');
  if (drafts.length > MAX_BATCH_EVENTS) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_LIMIT_EXCEEDED',
      `a batch holds at most ${MAX_BATCH_EVENTS} events, got ${drafts.length}`,
      { details: { limit: MAX_BATCH_EVENTS, actual: drafts.length } },
    );
  }
  return drafts.map((draft, index) => {
    try {
      return parseDurableEventDraft(draft);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `events[${index}]: ${message}`, {
        cause: error,
        details: { index },
      });
    }
  });
}

/** Validates the shape of `expectedLastSequence` (undefined, null, or a sequence >= 1). */
export function checkExpectedLastSequence(value: unknown): EventSequence | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalidInput('expectedLastSequence must be undefined, null or an integer >= 1');
  }
  return EventSequence(value);
}

/** Throws the conflict error when the precondition does not hold. */
export function checkPrecondition(expected: EventSequence | null | undefined, head: EventSequence | null): void {
  if (expected === undefined) return;
  if (expected !== head) throw new DurableEventSequenceConflictError(expected, head);
}

function validateFenceShape(fence: unknown): DurableExecutionFence {
  const f = fence as Partial<DurableExecutionFence> | null;
  if (
    typeof f !== 'object' ||
    f === null ||
    describeInvalidId(f.leaseId) !== undefined ||
    describeInvalidId(f.ownerId) !== undefined ||
    typeof f.fencingToken !== 'number' ||
    !Number.isSafeInteger(f.fencingToken) ||
    f.fencingToken < 1
  ) {
    throw new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_INVALID', 'executionFence is malformed');
  }
  return f as DurableExecutionFence;
}

/** True when `state` is an unreleased lease whose expiry lies after `nowMs`. */
export function isLeaseActive(state: LeaseState | null, nowMs: number): boolean {
  return state !== null && !state.released && nowMs < state.expiresAtMs;
}

function sameLease(state: LeaseState, fence: DurableExecutionFence): boolean {
  return (
    state.leaseId === fence.leaseId && state.ownerId === fence.ownerId && state.fencingToken === fence.fencingToken
  );
}

/**
 * The fence rule of appends and assertions. No lease state and no fence: allowed. Lease state
 * and no fence: `DURABLE_EXECUTION_LEASE_REQUIRED` (sticky, even after expiry or release). A
 * fence that is not the current active lease: `DURABLE_EXECUTION_LEASE_LOST`.
 */
export function checkFence(state: LeaseState | null, fence: unknown, nowMs: number): void {
  if (fence === undefined) {
    if (state !== null) {
      throw new DurableExecutionLeaseError(
        'DURABLE_EXECUTION_LEASE_REQUIRED',
        'this session has execution lease state; appends must carry the current lease fence',
      );
    }
    return;
  }
  const checked = validateFenceShape(fence);
  if (state === null) {
    throw new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_LOST', 'no execution lease exists for this session');
  }
  if (!sameLease(state, checked)) {
    throw new DurableExecutionLeaseError(
      'DURABLE_EXECUTION_LEASE_LOST',
      `lease ${checked.leaseId} (token ${checked.fencingToken}) was replaced by token ${state.fencingToken}`,
    );
  }
  if (state.released) {
    throw new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_LOST', `lease ${checked.leaseId} was released`);
  }
  if (nowMs >= state.expiresAtMs) {
    throw new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_LOST', `lease ${checked.leaseId} expired`);
  }
}

/** Inputs of {@link planAppend}: the validated drafts and the state read under the lock. */
export interface AppendPlanInput {
  sessionId: SessionId;
  drafts: readonly DurableEventDraft[];
  options: DurableAppendOptions | undefined;
  head: EventSequence | null;
  lease: LeaseState | null;
  nowMs: number;
  newEventId?: () => EventId;
  /**
   * When given, receives `JSON.stringify(envelope)` of every planned event, in order (only once
   * the whole plan succeeded), so an adapter can write the encoding the byte limits were checked on
   * instead of encoding each event a second time.
   */
  encodings?: string[] | undefined;
}

/**
 * Encoded sizes (UTF-8 bytes of `JSON.stringify`) of the envelopes {@link planAppend} built in
 * this process, keyed by the `events` array of the plan (one entry per append, not per event),
 * which a store hands back in its append result. Only a hint: events that came from a read,
 * another process or a copy are simply not in it.
 */
const plannedSizes = new WeakMap<readonly DurableEventEnvelope[], readonly number[]>();

/**
 * The encoded sizes {@link planAppend} measured for `events` (index by index) when this very array
 * was planned here, else `undefined` (measure them yourself). Lets the journal's checkpoint policy
 * count bytes without encoding every appended event a second time.
 */
export function plannedEncodedBytes(events: readonly DurableEventEnvelope[]): readonly number[] | undefined {
  return plannedSizes.get(events);
}

/** Arrays of envelopes an adapter marked as fully parsed in this process (see {@link markParsedEnvelopes}). */
const parsedEnvelopeArrays = new WeakSet<readonly DurableEventEnvelope[]>();

/**
 * For adapters: marks `events` as an array whose every element passed the full envelope parser
 * (`parseDurableEventEnvelope`) in this process, or is a copy of an envelope that did or that
 * {@link planAppend} built from validated drafts, handed out fresh to the caller. A journal folding such an array skips its own schema pass (every lifecycle
 * rule still applies). Never mark envelopes trusted from a cache or from another process.
 */
export function markParsedEnvelopes<T extends readonly DurableEventEnvelope[]>(events: T): T {
  parsedEnvelopeArrays.add(events);
  return events;
}

/**
 * True when `events` is an array {@link planAppend} built in this process (valid by construction)
 * or one an adapter marked with {@link markParsedEnvelopes}.
 */
export function areParsedEnvelopes(events: readonly DurableEventEnvelope[]): boolean {
  return parsedEnvelopeArrays.has(events) || plannedSizes.has(events);
}

/** `toISOString()` of the last time a plan was stamped with (appends often share a millisecond). */
let lastStampMs = Number.NaN;
let lastStamp = '';
/** The largest time value, in ms from the epoch either way, that `Date` represents. */
const MAX_TIME_VALUE_MS = 8.64e15;
/** The last whole second formatted, up to and including its `.` (appends often share a second). */
let lastSecond = Number.NaN;
let lastSecondPrefix = '';

/**
 * `new Date(ms).toISOString()`, reusing the formatted date and time of the last second stamped
 * (also the Session's `occurredAt` stamp: its commits and the appends share a millisecond often).
 */
export function isoOf(ms: number): string {
  if (ms === lastStampMs) return lastStamp;
  // `Date` drops the fraction of a millisecond (toward zero), then the milliseconds are the last
  // three digits before `Z` in every ISO form, extended years included.
  const whole = Math.trunc(ms);
  const second = Math.floor(whole / 1000);
  let stamp: string;
  if (second === lastSecond && Math.abs(whole) <= MAX_TIME_VALUE_MS) {
    const millis = whole - second * 1000;
    stamp = `${lastSecondPrefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
  } else {
    // Throws RangeError for a time Date cannot represent (toISOString does).
    stamp = new Date(ms).toISOString();
    lastSecond = second;
    lastSecondPrefix = stamp.slice(0, -4);
  }
  lastStamp = stamp;
  lastStampMs = ms;
  return stamp;
}

/** Default event ID source: a random UUID. */
function randomEventId(): EventId {
  return EventId(crypto.randomUUID());
}

/**
 * Decides one append: fence, precondition, sequences, envelopes, byte limits. Pure; throws the
 * public error on refusal. The caller writes `result.events` as one batch, then reports `result`.
 */
export function planAppend(input: AppendPlanInput): DurableAppendResult {
  const expected = checkExpectedLastSequence(input.options?.expectedLastSequence);
  checkFence(input.lease, input.options?.executionFence, input.nowMs);
  checkPrecondition(expected, input.head);
  const recordedAt = isoOf(input.nowMs);
  const nextId = input.newEventId ?? randomEventId;
  const base = input.head ?? 0;
  let batchBytes = 0;
  const encodings: string[] = [];
  const sizes: number[] = [];
  const events = input.drafts.map((draft, index) => {
    const { occurredAt, ...rest } = draft;
    // SAFETY: the draft was validated per type; adding store fields keeps the discriminant.
    const envelope = {
      schemaVersion: DURABLE_EVENT_SCHEMA_VERSION,
      eventId: nextId(),
      sequence: EventSequence(base + index + 1),
      sessionId: input.sessionId,
      ...rest,
      recordedAt,
      occurredAt: occurredAt ?? recordedAt,
    } as DurableEventEnvelope;
    const encoded = JSON.stringify(envelope);
    encodings[index] = encoded;
    const bytes = utf8ByteLength(encoded);
    if (bytes > MAX_EVENT_BYTES) {
      throw new DurableEventStoreError(
        'DURABLE_EVENT_LIMIT_EXCEEDED',
        `events[${index}] encodes to ${bytes} bytes; the limit is ${MAX_EVENT_BYTES}`,
        { details: { index, limit: MAX_EVENT_BYTES, actual: bytes } },
      );
    }
    batchBytes += bytes;
    sizes[index] = bytes;
    return envelope;
  });
  if (batchBytes > MAX_BATCH_BYTES) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_LIMIT_EXCEEDED',
      `the batch encodes to ${batchBytes} bytes; the limit is ${MAX_BATCH_BYTES}`,
      { details: { limit: MAX_BATCH_BYTES, actual: batchBytes } },
    );
  }
  const last = events[events.length - 1];
  if (last === undefined) throw invalidInput('an append needs at least one event');
  input.encodings?.push(...encodings);
  plannedSizes.set(events, sizes);
  return { previousSequence: input.head, lastSequence: last.sequence, events };
}

/** Validated read parameters. */
export interface ReadPlan {
  after: EventSequence | undefined;
  limit: number;
  /** Byte budget of the page (see {@link MAX_READ_PAGE_BYTES}). */
  maxBytes: number;
}

/** Validates `after`, `limit` and `maxBytes` (shape only; {@link checkReadCursor} compares with the head). */
export function planRead(options: { after?: unknown; limit?: unknown; maxBytes?: unknown } | undefined): ReadPlan {
  const after = options?.after;
  const limit = options?.limit ?? DEFAULT_READ_LIMIT;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_READ_LIMIT) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_INVALID_INPUT',
      `limit must be an integer in 1..${MAX_READ_LIMIT}, got ${String(limit)}`,
    );
  }
  const maxBytes = options?.maxBytes ?? MAX_READ_PAGE_BYTES;
  if (typeof maxBytes !== 'number' || !Number.isSafeInteger(maxBytes) || maxBytes < 1 || maxBytes > MAX_READ_PAGE_BYTES) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_INVALID_INPUT',
      `maxBytes must be an integer in 1..${MAX_READ_PAGE_BYTES}, got ${String(maxBytes)}`,
    );
  }
  if (after === undefined) return { after: undefined, limit, maxBytes };
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 1) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_CURSOR', 'after must be an integer sequence >= 1');
  }
  return { after: EventSequence(after), limit, maxBytes };
}

/** Encoded size of a stored envelope: UTF-8 bytes of its JSON, the unit of every byte limit. */
export function encodedEventBytes(event: DurableEventEnvelope): number {
  return utf8ByteLength(JSON.stringify(event));
}

/**
 * How many leading items of a page fit in `budget` bytes, given each item's size: stops before the
 * item that would pass the budget, but always takes the first one (a page is never empty while
 * events remain, so a reader always makes progress).
 */
export function countWithinByteBudget(count: number, sizeOf: (index: number) => number, budget: number): number {
  let used = 0;
  for (let index = 0; index < count; index++) {
    used += sizeOf(index);
    if (used > budget && index > 0) return index;
  }
  return count;
}

/** Rejects a cursor ahead of the head instead of serving a silent empty page. */
export function checkReadCursor(after: EventSequence | undefined, head: EventSequence | null): void {
  if (after !== undefined && (head === null || after > head)) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_INVALID_CURSOR',
      `cursor ${after} is ahead of the head ${String(head)}`,
      { details: { after, headSequence: head } },
    );
  }
}

/**
 * Shapes a page from the events the adapter loaded (at most `limit`, in order, after `after`),
 * cutting it to the plan's byte budget: `sizes[i]` is the encoded size of `events[i]` when the
 * adapter knows it (measured otherwise; `'already-cut'` when the adapter applied the budget
 * while loading). A cut page has `hasMore: true` and a cursor to continue.
 */
export function buildReadPage(
  loaded: DurableEventEnvelope[],
  plan: ReadPlan,
  head: EventSequence | null,
  sizes?: ArrayLike<number> | 'already-cut',
): DurableReadResult {
  const fits =
    sizes === 'already-cut'
      ? loaded.length
      : countWithinByteBudget(
          loaded.length,
          (index) => sizes?.[index] ?? encodedEventBytes(loaded[index] as DurableEventEnvelope),
          plan.maxBytes,
        );
  const events = fits === loaded.length ? loaded : loaded.slice(0, fits);
  if (events !== loaded && parsedEnvelopeArrays.has(loaded)) parsedEnvelopeArrays.add(events);
  const last = events[events.length - 1];
  const nextCursor = last?.sequence ?? plan.after ?? null;
  return { events, nextCursor, headSequence: head, hasMore: head !== null && (nextCursor ?? 0) < head };
}

/** Validates a lease TTL. */
export function checkLeaseTtl(ttlMs: unknown): number {
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs < MIN_LEASE_TTL_MS || ttlMs > MAX_LEASE_TTL_MS) {
    throw new DurableExecutionLeaseError(
      'DURABLE_EXECUTION_LEASE_INVALID',
      `ttlMs must be an integer in ${MIN_LEASE_TTL_MS}..${MAX_LEASE_TTL_MS}`,
    );
  }
  return ttlMs;
}

/**
 * Acquisition. Returns the new state (to persist) — the same object when nothing changed.
 * A retry by the current active lease (same `leaseId` and owner) reconciles and extends it.
 */
export function decideAcquire(
  state: LeaseState | null,
  request: { ownerId: unknown; leaseId: unknown; ttlMs: unknown },
  nowMs: number,
): LeaseState {
  const ttlMs = checkLeaseTtl(request.ttlMs);
  if (describeInvalidId(request.ownerId) !== undefined || describeInvalidId(request.leaseId) !== undefined) {
    throw new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_INVALID', 'ownerId and leaseId must be valid IDs');
  }
  // SAFETY: validated just above.
  const ownerId = request.ownerId as WorkerId;
  const leaseId = request.leaseId as string;
  // Read before the guard: `isLeaseActive` narrows `state` to null in its false branch.
  const previousToken = state?.fencingToken ?? 0;
  if (state !== null && isLeaseActive(state, nowMs)) {
    if (state.leaseId === leaseId && state.ownerId === ownerId) {
      return { ...state, expiresAtMs: Math.max(state.expiresAtMs, nowMs + ttlMs) };
    }
    throw new DurableExecutionLeaseError(
      'DURABLE_EXECUTION_LEASE_CONFLICT',
      `session is leased by ${state.ownerId} until ${new Date(state.expiresAtMs).toISOString()}`,
      { details: { ownerId: state.ownerId, expiresAtMs: state.expiresAtMs } },
    );
  }
  return {
    leaseId,
    ownerId,
    fencingToken: FencingToken(previousToken + 1),
    acquiredAtMs: nowMs,
    expiresAtMs: nowMs + ttlMs,
    released: false,
  };
}

/** Renewal: only the current active lease may extend itself. */
export function decideRenew(state: LeaseState | null, fence: DurableExecutionFence, ttlMs: unknown, nowMs: number): LeaseState {
  const ttl = checkLeaseTtl(ttlMs);
  checkFence(state, fence, nowMs);
  // SAFETY: checkFence throws when state is null.
  const current = state as LeaseState;
  return { ...current, expiresAtMs: nowMs + ttl };
}

/** Release: idempotent for the holder; a stale fence is `DURABLE_EXECUTION_LEASE_LOST`. */
export function decideRelease(state: LeaseState | null, fence: DurableExecutionFence, nowMs: number): LeaseState {
  const checked = validateFenceShape(fence);
  if (state === null || !sameLease(state, checked)) {
    throw new DurableExecutionLeaseError('DURABLE_EXECUTION_LEASE_LOST', `lease ${checked.leaseId} is not the current lease`);
  }
  if (state.released) return state;
  return { ...state, released: true, expiresAtMs: Math.min(state.expiresAtMs, nowMs) };
}

/** Public record of a persisted lease state. */
export function leaseRecord(sessionId: SessionId, state: LeaseState): DurableExecutionLeaseRecord {
  return {
    sessionId,
    leaseId: state.leaseId,
    ownerId: state.ownerId,
    fencingToken: state.fencingToken,
    acquiredAtMs: state.acquiredAtMs,
    expiresAtMs: state.expiresAtMs,
    released: state.released,
  };
}

/** Parses lease state read back from storage; a malformed record is a corrupt log. */
export function parseLeaseState(value: unknown): LeaseState {
  const v = value as Partial<LeaseState> | null;
  if (
    typeof v !== 'object' ||
    v === null ||
    describeInvalidId(v.leaseId) !== undefined ||
    describeInvalidId(v.ownerId) !== undefined ||
    typeof v.fencingToken !== 'number' ||
    !Number.isSafeInteger(v.fencingToken) ||
    v.fencingToken < 1 ||
    typeof v.acquiredAtMs !== 'number' ||
    typeof v.expiresAtMs !== 'number' ||
    typeof v.released !== 'boolean'
  ) {
    throw new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', 'persisted execution lease state is malformed');
  }
  return {
    leaseId: v.leaseId as string,
    ownerId: v.ownerId as WorkerId,
    fencingToken: FencingToken(v.fencingToken),
    acquiredAtMs: v.acquiredAtMs,
    expiresAtMs: v.expiresAtMs,
    released: v.released,
  };
}
