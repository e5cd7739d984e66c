/**
 * MemoryDurableEventStore: the whole store contract in process memory.
 *
 * Ephemeral by design (a restart loses everything). It exists for tests, examples and hosts that
 * only need in-process recovery. All decisions come from the core log engine; this file only keeps
 * arrays. Calls are synchronous under the hood, so each one is trivially atomic; watchers run
 * after the batch is stored.
 *
 * It also keeps each session's durability records (`recordDurability` / `readDurability` /
 * `watchDurability`): an array of records plus an index by identity, with every decision taken
 * by the core durability record engine and every record parsed again on read.
 */
import { throwIfAborted } from '../../core/abort.js';
import {
  checkCheckpointRecord,
  extendsStoredRecord,
  reuseCheckpointBuffer,
  type DurableCheckpointRecord,
  type DurableCheckpointStore,
} from '../../core/checkpoint/contract.js';
import { encodeLiveCheckpoint, type DurableLiveCheckpoint, type DurableLiveCheckpointStore } from '../../core/checkpoint/live.js';
import {
  buildReadPage,
  markParsedEnvelopes,
  checkFence,
  checkReadCursor,
  checkSessionId,
  decideAcquire,
  decideRelease,
  decideRenew,
  leaseRecord,
  planAppend,
  planRead,
  validateDraftBatch,
  type LeaseState,
} from '../../core/log-engine.js';
import type {
  DurableAppendListener,
  DurableAppendNotice,
  DurableAppendOptions,
  DurableAppendResult,
  DurableEventStore,
  DurableExecutionFence,
  DurableExecutionLeaseRecord,
  DurableExecutionLeaseStore,
  DurableLeaseAcquireOptions,
  DurableLeaseRenewOptions,
  DurableReadOptions,
  DurableReadResult,
  DurableStoreCallOptions,
  StoreTestHooks,
} from '../../core/store.js';
import type {
  DurabilityRecordStore,
  DurabilityListener,
  DurabilityNotice,
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecord,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../core/durability/record-contract.js';
import {
  buildDurabilityPage,
  checkDurabilityCursor,
  checkDurabilitySessionId,
  durabilityIdentity,
  parseDurabilityRecord,
  planDurabilityRead,
  planDurabilityRecord,
  validateDurabilityDraft,
} from '../../core/durability/record-engine.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import type { DurableEventDraft, DurableEventEnvelope } from '../../protocol/events.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';

export type { StoreTestHooks } from '../../core/store.js';

/** Options of {@link MemoryDurableEventStore}. */
export interface MemoryDurableEventStoreOptions {
  /** Clock in epoch milliseconds (default `Date.now`). */
  clock?: () => number;
  /** Test-only fault injection. */
  testHooks?: StoreTestHooks;
  /**
   * Keep the checkpoints of journals in this process as their live objects (default `true`):
   * writing one then costs a few references instead of an encoding, and a journal opening on this
   * store adopts it with every used ID known exactly. `readCheckpoint` still answers with bytes,
   * encoded on demand. `false` keeps encoded records only, like every other store.
   */
  liveCheckpoints?: boolean;
}

/**
 * Runs one listener in isolation. A notice is only a hint (subscribers re-read the log), so a
 * throwing listener must neither reach the appender nor, through an uncaught microtask error,
 * take the process down; other listeners still run.
 */
function notify(listener: DurableAppendListener, notice: DurableAppendNotice): void {
  try {
    listener(notice);
  } catch {
    // Deliberately ignored: see above.
  }
}

function notifyDurability(listener: DurabilityListener, notice: DurabilityNotice): void {
  try {
    listener(notice);
  } catch {
    // Deliberately ignored, like `notify`: a notice is only a hint.
  }
}

interface SessionState {
  events: DurableEventEnvelope[];
  lease: LeaseState | null;
  listeners: Set<DurableAppendListener>;
  /** The durability records: record `n` sits at index `n - 1`. */
  durability: DurabilityRecord[];
  /** Durability records by `durabilityIdentity`. */
  durabilityByIdentity: Map<string, DurabilityRecord>;
  durabilityListeners: Set<DurabilityListener>;
  /**
   * The latest projection checkpoint as a record (derived data; see `docs/checkpoints.md`): the
   * one written, or the encoding of `live` once somebody read it.
   */
  checkpoint: DurableCheckpointRecord | null;
  /** ...or, when the latest one was written live, that checkpoint. */
  live: DurableLiveCheckpoint | null;
}

/**
 * In-memory store implementing {@link DurableEventStore} and {@link DurableExecutionLeaseStore}.
 *
 * @example
 * const store = new MemoryDurableEventStore();
 * await store.append(SessionId('s'), [{ type: DurableEventType.SESSION_CREATED, data: {} }], {
 *   expectedLastSequence: null,
 * });
 */
export class MemoryDurableEventStore
  implements DurableEventStore, DurableExecutionLeaseStore, DurabilityRecordStore, DurableCheckpointStore, DurableLiveCheckpointStore
{
  readonly #sessions = new Map<string, SessionState>();
  readonly #clock: () => number;
  readonly #hooks: StoreTestHooks;
  /** Journals in this process hand their checkpoints over live (see the option). */
  readonly liveCheckpoints: boolean;

  constructor(options: MemoryDurableEventStoreOptions = {}) {
    this.#clock = options.clock ?? Date.now;
    this.#hooks = options.testHooks ?? {};
    this.liveCheckpoints = options.liveCheckpoints ?? true;
  }

  #session(sessionId: SessionId): SessionState {
    let state = this.#sessions.get(sessionId);
    if (state === undefined) {
      state = {
        events: [],
        lease: null,
        listeners: new Set(),
        durability: [],
        durabilityByIdentity: new Map(),
        durabilityListeners: new Set(),
        checkpoint: null,
        live: null,
      };
      this.#sessions.set(sessionId, state);
    }
    return state;
  }

  #head(state: SessionState): EventSequence | null {
    const last = state.events[state.events.length - 1];
    return last === undefined ? null : last.sequence;
  }

  async append(
    sessionId: SessionId,
    drafts: readonly DurableEventDraft[],
    options?: DurableAppendOptions,
  ): Promise<DurableAppendResult> {
    throwIfAborted(options?.signal);
    const id = checkSessionId(sessionId);
    const valid = validateDraftBatch(drafts);
    const state = this.#session(id);
    const encodings: string[] = [];
    const result = planAppend({
      sessionId: id,
      drafts: valid,
      options,
      head: this.#head(state),
      lease: state.lease,
      nowMs: this.#clock(),
      encodings,
    });
    throwIfAborted(options?.signal);
    try {
      this.#hooks.beforeCommit?.(id);
    } catch (error) {
      throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', 'commit failed before anything was written', {
        cause: error,
      });
    }
    // The stored copy is parsed back from the encoding `planAppend` measured: a validated event is
    // lossless JSON, so this is an exact deep copy (and cheaper than `structuredClone`).
    for (const encoded of encodings) state.events.push(JSON.parse(encoded) as DurableEventEnvelope);
    const notice = { sessionId: id, lastSequence: result.lastSequence };
    for (const listener of [...state.listeners]) queueMicrotask(() => notify(listener, notice));
    return result;
  }

  async read(sessionId: SessionId, options?: DurableReadOptions): Promise<DurableReadResult> {
    throwIfAborted(options?.signal);
    const id = checkSessionId(sessionId);
    const plan = planRead(options);
    const state = this.#sessions.get(id);
    const events = state?.events ?? [];
    const head = state === undefined ? null : this.#head(state);
    checkReadCursor(plan.after, head);
    const start = plan.after ?? 0; // sequence n sits at index n - 1
    // Copies of events `planAppend` built from validated drafts: valid envelopes by construction.
    const page = markParsedEnvelopes(events.slice(start, start + plan.limit).map((e) => structuredClone(e)));
    return buildReadPage(page, plan, head);
  }

  async getHeadSequence(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<EventSequence | null> {
    throwIfAborted(options?.signal);
    const state = this.#sessions.get(checkSessionId(sessionId));
    return state === undefined ? null : this.#head(state);
  }

  /**
   * The session's latest projection checkpoint (a copy), or `null`. A live one is encoded on the
   * first read (O(IDs the session used)) and the encoding kept until the next write.
   */
  async readCheckpoint(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableCheckpointRecord | null> {
    throwIfAborted(options?.signal);
    const state = this.#sessions.get(checkSessionId(sessionId));
    if (state === undefined) return null;
    if (state.checkpoint === null && state.live !== null) state.checkpoint = encodeLiveCheckpoint(state.live);
    const saved = state.checkpoint;
    return saved === null ? null : { ...saved, data: saved.data.slice() };
  }

  /**
   * Replaces the session's checkpoint by a journal's live one (kept by reference; for journals in
   * this process, see `liveCheckpoints`). Refused when the store keeps encoded records only.
   */
  async writeLiveCheckpoint(sessionId: SessionId, checkpoint: DurableLiveCheckpoint, options?: DurableStoreCallOptions): Promise<void> {
    throwIfAborted(options?.signal);
    const id = checkSessionId(sessionId);
    if (!this.liveCheckpoints) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'this store keeps encoded checkpoints only (liveCheckpoints: false)');
    if (checkpoint.sessionId !== id) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `a checkpoint of session ${checkpoint.sessionId} cannot be stored under ${id}`);
    }
    const state = this.#session(id);
    state.live = checkpoint;
    state.checkpoint = null;
  }

  /** The session's live checkpoint, or `null` (none, or the latest one was written as a record). */
  async readLiveCheckpoint(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableLiveCheckpoint | null> {
    throwIfAborted(options?.signal);
    return this.#sessions.get(checkSessionId(sessionId))?.live ?? null;
  }

  /** This store keeps extended checkpoint records by copying only their new bytes. */
  readonly checkpointExtension = true;

  /**
   * Replaces the session's projection checkpoint. A record that extends the stored one
   * (`extendsBytes`, checked against the stored bytes) copies only its new frames.
   */
  async writeCheckpoint(sessionId: SessionId, record: DurableCheckpointRecord, options?: DurableStoreCallOptions): Promise<void> {
    throwIfAborted(options?.signal);
    const id = checkSessionId(sessionId);
    const checked = checkCheckpointRecord(record, false);
    const state = this.#session(id);
    const stored = state.checkpoint?.data;
    // Copy into the previous checkpoint's buffer when it fits (reads hand out copies, so nobody
    // else holds it); an extension keeps the prefix it shares with the stored record.
    const length = checked.data.length;
    const kept = stored !== undefined && extendsStoredRecord(stored, checked) ? (checked.extendsBytes ?? 0) : 0;
    const buffer = reuseCheckpointBuffer(stored?.buffer, length);
    const data = new Uint8Array(buffer, 0, length);
    if (kept > 0 && stored !== undefined && buffer !== stored.buffer) data.set(stored.subarray(0, kept));
    data.set(kept === 0 ? checked.data : checked.data.subarray(kept), kept);
    state.checkpoint = { sequence: checked.sequence, eventId: checked.eventId, data };
    state.live = null;
  }

  watch(sessionId: SessionId, listener: DurableAppendListener): () => void {
    const state = this.#session(checkSessionId(sessionId));
    state.listeners.add(listener);
    return () => {
      state.listeners.delete(listener);
    };
  }

  async acquireExecutionLease(
    sessionId: SessionId,
    options: DurableLeaseAcquireOptions,
  ): Promise<DurableExecutionLeaseRecord> {
    throwIfAborted(options.signal);
    const id = checkSessionId(sessionId);
    const state = this.#session(id);
    state.lease = decideAcquire(state.lease, options, this.#clock());
    return leaseRecord(id, state.lease);
  }

  async renewExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options: DurableLeaseRenewOptions,
  ): Promise<DurableExecutionLeaseRecord> {
    throwIfAborted(options.signal);
    const id = checkSessionId(sessionId);
    const state = this.#session(id);
    state.lease = decideRenew(state.lease, fence, options.ttlMs, this.#clock());
    return leaseRecord(id, state.lease);
  }

  async releaseExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options?: DurableStoreCallOptions,
  ): Promise<void> {
    throwIfAborted(options?.signal);
    const state = this.#session(checkSessionId(sessionId));
    state.lease = decideRelease(state.lease, fence, this.#clock());
  }

  async assertExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options?: DurableStoreCallOptions,
  ): Promise<void> {
    throwIfAborted(options?.signal);
    const state = this.#sessions.get(checkSessionId(sessionId));
    checkFence(state?.lease ?? null, fence, this.#clock());
  }

  async inspectExecutionLease(
    sessionId: SessionId,
    options?: DurableStoreCallOptions,
  ): Promise<DurableExecutionLeaseRecord | null> {
    throwIfAborted(options?.signal);
    const id = checkSessionId(sessionId);
    const lease = this.#sessions.get(id)?.lease ?? null;
    return lease === null ? null : leaseRecord(id, lease);
  }

  async requiresExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<boolean> {
    throwIfAborted(options?.signal);
    return (this.#sessions.get(checkSessionId(sessionId))?.lease ?? null) !== null;
  }

  /** Appends a durability record unless its identity exists; see {@link DurabilityRecordStore.recordDurability}. */
  async recordDurability(
    sessionId: SessionId,
    draft: DurabilityRecordDraft,
    options?: DurableStoreCallOptions,
  ): Promise<DurabilityRecordResult> {
    throwIfAborted(options?.signal);
    const id = checkDurabilitySessionId(sessionId);
    const valid = validateDurabilityDraft(draft);
    const state = this.#session(id);
    const identity = durabilityIdentity(valid);
    const last = state.durability[state.durability.length - 1];
    const planned = planDurabilityRecord({
      sessionId: id,
      draft: valid,
      existing: state.durabilityByIdentity.get(identity),
      head: last === undefined ? null : last.sequence,
      nowMs: this.#clock(),
    });
    if (planned.created) {
      throwIfAborted(options?.signal);
      state.durability.push(planned.record);
      state.durabilityByIdentity.set(identity, planned.record);
      const notice = { sessionId: id, lastSequence: planned.record.sequence };
      for (const listener of [...state.durabilityListeners]) queueMicrotask(() => notifyDurability(listener, notice));
    }
    // Parsing copies: the caller never holds a reference into the stored records.
    return { record: parseDurabilityRecord(planned.record), created: planned.created };
  }

  /** Reads one page of the session's durability records; see {@link DurabilityRecordStore.readDurability}. */
  async readDurability(sessionId: SessionId, options?: DurabilityReadOptions): Promise<DurabilityReadResult> {
    throwIfAborted(options?.signal);
    const id = checkDurabilitySessionId(sessionId);
    const plan = planDurabilityRead(options);
    const records = this.#sessions.get(id)?.durability ?? [];
    const last = records[records.length - 1];
    const head = last === undefined ? null : last.sequence;
    checkDurabilityCursor(plan.after, head);
    const start = plan.after ?? 0; // record n sits at index n - 1
    const page = records
      .slice(start, start + plan.limit)
      .map((record, index) => parseDurabilityRecord(record, { sessionId: id, sequence: start + index + 1 }));
    return buildDurabilityPage(page, plan, head);
  }

  /** Hears every record created in the session, after it is stored. Returns an unsubscribe function. */
  watchDurability(sessionId: SessionId, listener: DurabilityListener): () => void {
    const state = this.#session(checkDurabilitySessionId(sessionId));
    state.durabilityListeners.add(listener);
    return () => {
      state.durabilityListeners.delete(listener);
    };
  }
}
