/**
 * The journal's in-memory view of one session's log.
 *
 * It owns the projector, the command index and the loaded head, and is the only place that
 * reads the store on the journal's behalf:
 * 1. `refresh` folds every event after the loaded head, page by page. Its first read starts one
 *    event early, at the loaded head itself, and requires the same event ID there: a log that was
 *    replaced or truncated under the journal fails closed instead of being appended to.
 * 2. Every page must continue the sequence of this session exactly, or the read fails with
 *    `DurableSessionJournalError`; the projector then rechecks every lifecycle invariant.
 * 3. `readRange` reads one command's events back (the index keeps positions, not bodies).
 * 4. Projection checkpoints (`../checkpoint/`): `load` starts from the latest valid checkpoint
 *    and folds only the events after it; `fold` keeps a running digest and, when the policy says
 *    so, writes a new checkpoint after the current call returns (off the append's critical path;
 *    a write the open's own fold made due settles before `load` returns).
 *    When a checkpoint-restored projector cannot decide on its own (an ID that may be older than
 *    the checkpoint), `rebuild` folds the log from the first event and the caller retries.
 * Every store call is bounded by `storeTimeoutMs` and the caller's signal.
 */
import { AbortControllerLender, throwIfAborted, withDeadline } from '../abort.js';
import { systemTime } from '../time.js';
import { DurableSessionProjector } from '../projector/index.js';
import type { DurableEventStore } from '../store.js';
import { DurableEventProjectionError, DurableEventStoreError, DurableSessionJournalError } from '../../protocol/errors.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';
import { EventSequence, type EventId, type SessionId } from '../../protocol/ids.js';
import { MAX_READ_LIMIT } from '../../protocol/limits.js';
import { areParsedEnvelopes, plannedEncodedBytes } from '../log-engine.js';
import { CommandIndex, type CommandRange } from '../command-index.js';
import { anchorOf, chainDigest, encodeCompacted, encodeExtension, type CheckpointContent, type CheckpointExtent } from '../checkpoint/codec.js';
import { isCheckpointStore, keepsCheckpointExtensions, reuseCheckpointBuffer, type DurableCheckpointRecord, type DurableCheckpointStore } from '../checkpoint/contract.js';
import { INITIAL_HASH_STATE, type RunningHashState } from '../hash.js';
import { HashedKeyFilter, isCheckpointInconclusive, sortedHashes } from '../projector/key-filter.js';
import { keepsLiveCheckpoints, type DurableLiveCheckpoint, type DurableLiveCheckpointStore } from '../checkpoint/live.js';
import { loadCheckpoint, type DurableCheckpointOutcome, type LoadedCheckpoint } from '../checkpoint/load.js';
import { checkpointDue, type CheckpointSettings, type DurableCheckpointWriteInfo } from '../checkpoint/policy.js';
import { ID_SPACE } from '../projector/fold-state.js';
import { DURABLE_PROJECTOR_VERSION } from '../projector/projector.js';

const immediate = (globalThis as { setImmediate?: (callback: () => void) => unknown }).setImmediate;

/**
 * Resolves in a later macrotask, once the current call and its promise reactions have run:
 * `setImmediate` where the runtime has one (Node: no 1 ms timer clamp, so a queue of checkpoint
 * writes does not idle a millisecond per write), else a zero-delay timer (Workers, browsers).
 */
function nextTask(): Promise<void> {
  return new Promise((resolve) => {
    if (immediate === undefined) setTimeout(resolve, 0);
    else immediate(resolve);
  });
}

/** Builds a `DurableSessionJournalError` with optional details. */
export function journalError(message: string, details?: Record<string, unknown>): DurableSessionJournalError {
  return new DurableSessionJournalError(message, details === undefined ? undefined : { details });
}

/** Loaded state of one session's log: projection, command positions, head. */
export class JournalLog {
  projector: DurableSessionProjector;
  index = new CommandIndex();
  #head: EventSequence | null = null;
  #lastEventId: EventId | null = null;
  /** Running digest of the identities of events 1..head (`chainDigest`). */
  #digest: RunningHashState = INITIAL_HASH_STATE;
  /** Hash of the canonical event at the head, when it came from a checkpoint... */
  #anchor = 0;
  /** ...or the event at the head itself (hashed only when a checkpoint is captured). */
  #anchorEvent: DurableEventEnvelope | null = null;
  /** Hashes of the used IDs already drained from the projector's key set. */
  #filter: HashedKeyFilter = HashedKeyFilter.EMPTY;
  /**
   * The bytes of the latest record this journal loaded or encoded (its runs back `#filter`), and
   * where it ends: the base a next checkpoint extends on a store with `checkpointExtension`.
   */
  #record: { bytes: Uint8Array; extent: CheckpointExtent } | null = null;
  /** True when `#record` lives in a buffer this journal allocated (it may write past its end). */
  #ownsRecord = false;
  /** A buffer of an older checkpoint this journal encoded, free for the next encoding. */
  #spareBuffer: ArrayBuffer | null = null;
  /** True while the projector stands on a checkpoint's key filter. */
  #restored = false;
  #sinceEvents = 0;
  #sinceBytes = 0;
  /** Bumped by every reset: a queued checkpoint write of an older generation is dropped. */
  #generation = 0;
  #writes: Promise<void> = Promise.resolve();
  /** Signals of this log's store calls (commits run one at a time, so one is usually enough). */
  readonly #signals = new AbortControllerLender();
  /** What happened to the checkpoint at open (and whether a rebuild replaced it since). */
  checkpointOutcome: DurableCheckpointOutcome = { status: 'none' };

  constructor(
    private readonly store: DurableEventStore,
    readonly sessionId: SessionId,
    private readonly pageSize: number,
    readonly storeTimeoutMs: number,
    private readonly checkpoints: CheckpointSettings,
  ) {
    this.#writesCheckpoints = checkpoints.write && isCheckpointStore(store);
    this.#extends = keepsCheckpointExtensions(store);
    this.#live = this.#writesCheckpoints && keepsLiveCheckpoints(store);
    this.projector = new DurableSessionProjector({ sessionId });
    this.#trackAdds();
  }

  /** The policy writes checkpoints and the store can hold them (fixed for the journal's life). */
  readonly #writesCheckpoints: boolean;
  /**
   * The store keeps extended records: a write appends a frame, and writes are not spaced by
   * `head / spacingDivisor` (see the policy).
   */
  readonly #extends: boolean;
  /**
   * The store keeps live checkpoints (`../checkpoint/live.ts`): a write hands it the projector's
   * immutable state and a fork of its used-ID set, so nothing is hashed, merged or encoded and
   * new IDs are not tracked.
   */
  readonly #live: boolean;
  /** Keys in the set of the latest live checkpoint this journal wrote (for `onWrite`'s `addedKeys`). */
  #liveKeys = 0;

  #trackAdds(): void {
    if (this.#writesCheckpoints && !this.#live) this.projector.checkpointState().ids.trackAdds();
  }

  /**
   * Opens: the latest valid checkpoint (when allowed), then every event after it. When the tail
   * it folded made a checkpoint due (the policy's period; no checkpoint at all counts as the whole
   * log), the open returns only once that write settled: a short-lived process (a CLI call, a
   * serverless invocation) that closes its store and exits right after the open would otherwise
   * lose it, and every later open would fold the same tail again. A failed write goes to
   * `onWriteError` and the open still succeeds; the write is bounded by `storeTimeoutMs`.
   */
  async load(signal: AbortSignal | undefined): Promise<void> {
    if (this.checkpoints.read) {
      const { loaded, outcome } = await loadCheckpoint(
        this.store,
        this.sessionId,
        (after, limit) =>
          this.call(signal, (callSignal) => this.store.read(this.sessionId, { after, limit, signal: callSignal }), 'read'),
        signal,
      );
      this.checkpointOutcome = outcome;
      if (loaded !== null) this.#adopt(loaded);
    }
    await this.refresh(signal);
    // The only writes queued yet are the one the fold above made due (if any).
    await this.#writes;
  }

  #adopt(loaded: LoadedCheckpoint): void {
    this.projector = loaded.projector;
    this.index = loaded.index;
    this.#head = loaded.sequence;
    this.#lastEventId = loaded.eventId;
    this.#digest = loaded.digest;
    this.#anchor = loaded.anchor;
    this.#anchorEvent = null;
    const record = loaded.record;
    this.#filter = record?.keys ?? HashedKeyFilter.EMPTY;
    this.#record = record === null ? null : { bytes: record.data, extent: record.extent };
    this.#ownsRecord = false;
    this.#liveKeys = this.projector.checkpointState().ids.size;
    this.#restored = true;
    this.#trackAdds();
  }

  /** Forgets everything loaded (and any checkpoint) and folds the log from the first event. */
  async rebuild(signal: AbortSignal | undefined, reason: string): Promise<void> {
    this.#generation += 1;
    this.projector = new DurableSessionProjector({ sessionId: this.sessionId });
    this.index = new CommandIndex();
    this.#head = null;
    this.#lastEventId = null;
    this.#digest = INITIAL_HASH_STATE;
    this.#anchor = 0;
    this.#anchorEvent = null;
    this.#filter = HashedKeyFilter.EMPTY;
    this.#record = null;
    this.#ownsRecord = false;
    this.#restored = false;
    this.#sinceEvents = 0;
    this.#sinceBytes = 0;
    this.#liveKeys = 0;
    this.#trackAdds();
    this.checkpointOutcome = { status: 'rebuilt', reason };
    await this.refresh(signal);
  }

  /**
   * The range of `commandId`, also when it is older than the checkpoint this view started from
   * (then the log is folded from the start to locate it).
   */
  async findCommand(commandId: string, signal: AbortSignal | undefined): Promise<CommandRange | undefined> {
    // SAFETY: the index is keyed by command IDs; a lookup by a plain string is harmless.
    const known = this.index.get(commandId as never);
    if (known !== undefined || !this.#restored) return known;
    // Every command after the checkpoint is in the index, so a used ID the index lacks is older:
    // known exactly (a live checkpoint) or maybe (a record's key filter).
    if (!this.projector.checkpointState().ids.mightContain(ID_SPACE.command + commandId)) return undefined;
    await this.rebuild(signal, `command ${commandId} may be older than the checkpoint`);
    return this.index.get(commandId as never);
  }

  /** The loaded head (`null` for an empty log). */
  get head(): EventSequence | null {
    return this.#head;
  }

  /** Runs one store call under the journal deadline; a timeout is `DURABLE_EVENT_IO_TIMEOUT`. */
  call<T>(signal: AbortSignal | undefined, call: (signal: AbortSignal) => Promise<T>, what: string): Promise<T> {
    const timeoutMs = this.storeTimeoutMs;
    return withDeadline(
      timeoutMs,
      signal,
      call,
      () =>
        new DurableEventStoreError('DURABLE_EVENT_IO_TIMEOUT', `journal ${what} exceeded its deadline of ${timeoutMs} ms`, {
          details: { timeoutMs, sessionId: this.sessionId },
        }),
      systemTime,
      this.#signals,
    );
  }

  /** Throws once the projector has failed: the log is invalid and this view is unusable. */
  assertHealthy(): void {
    if (this.projector.failed) {
      throw new DurableEventProjectionError(
        `the journal of session ${this.sessionId} met an invalid log; repair it and open a new journal`,
        { cause: this.projector.error },
      );
    }
  }

  /** Folds every event after the loaded head, after proving the loaded head is still in the log. */
  async refresh(signal: AbortSignal | undefined): Promise<void> {
    try {
      await this.#refreshOnce(signal);
    } catch (error) {
      if (!isCheckpointInconclusive(error)) throw error;
      await this.rebuild(signal, error.message);
      return;
    }
    this.maybeCheckpoint();
  }

  async #refreshOnce(signal: AbortSignal | undefined): Promise<void> {
    throwIfAborted(signal);
    this.assertHealthy();
    let anchored = this.#head !== null;
    for (;;) {
      const head = this.#head;
      const after = anchored && head !== null ? (head > 1 ? EventSequence(head - 1) : undefined) : (head ?? undefined);
      const limit = anchored ? Math.min(this.pageSize + 1, MAX_READ_LIMIT) : this.pageSize;
      const page = await this.call(
        signal,
        (callSignal) => this.store.read(this.sessionId, { after, limit, signal: callSignal }),
        'read',
      );
      let events = page.events;
      const parsed = areParsedEnvelopes(events);
      if (anchored) {
        const first = events[0];
        if (first === undefined || first.sequence !== head || first.eventId !== this.#lastEventId) {
          throw journalError(
            `the log of session ${this.sessionId} no longer holds event ${String(this.#lastEventId)} at sequence ${String(head)}; it was replaced or truncated`,
            { sequence: head, eventId: this.#lastEventId },
          );
        }
        events = events.slice(1);
        anchored = false;
        // A page cut to its byte budget may hold the anchor alone: read on after it.
        if (events.length === 0 && page.hasMore) continue;
      }
      if (events.length === 0) {
        if (page.hasMore) throw journalError('the store returned an empty page with hasMore = true');
        return;
      }
      this.#checkPage(events);
      this.fold(events, parsed);
      if (!page.hasMore) return;
    }
  }

  #checkPage(events: readonly DurableEventEnvelope[]): void {
    let expected = (this.#head ?? 0) + 1;
    for (const event of events) {
      if (event.sessionId !== this.sessionId || event.sequence !== expected) {
        throw journalError(
          `the store returned event ${String(event.eventId)} (session ${String(event.sessionId)}, sequence ${String(event.sequence)}) where sequence ${expected} of session ${this.sessionId} belongs`,
          { expectedSequence: expected },
        );
      }
      expected += 1;
    }
  }

  /** Folds events that continue the loaded head (checked by the caller) into the view. */
  fold(events: readonly DurableEventEnvelope[], parsed = areParsedEnvelopes(events)): void {
    // Envelopes the store parsed in full (or planned) in this process skip the projector's schema
    // pass; every lifecycle rule still applies.
    if (parsed) this.projector.applyParsed(events);
    else this.projector.apply(events);
    this.index.observe(events);
    const last = events[events.length - 1];
    if (last === undefined) return;
    this.#head = last.sequence;
    this.#lastEventId = last.eventId;
    // The running digest only feeds checkpoints: a journal that never writes one skips it.
    if (!this.#writesCheckpoints) return;
    let digest = this.#digest;
    // The store's append measured its own envelopes (same process); anything else (a page read,
    // a remote store) is plain JSON, and the native serialiser is the cheap size estimate.
    const sizes = plannedEncodedBytes(events);
    for (let index = 0; index < events.length; index++) {
      // SAFETY: index < length.
      const event = events[index] as DurableEventEnvelope;
      digest = chainDigest(digest, event);
      this.#sinceBytes += sizes?.[index] ?? JSON.stringify(event).length;
    }
    this.#digest = digest;
    this.#anchorEvent = last;
    this.#sinceEvents += events.length;
  }

  /**
   * Queues a checkpoint write when the policy says one is due. Called once per refresh and once
   * per accepted append, not per page: a long catch-up writes one checkpoint at its end.
   */
  maybeCheckpoint(): void {
    const head = this.#head;
    if (head === null || !this.#writesCheckpoints) return;
    if (checkpointDue(this.checkpoints, head, this.#sinceEvents, this.#sinceBytes, !this.#extends)) void this.checkpoint(false);
  }

  /**
   * Captures a checkpoint at the loaded head now and writes it after the current call returns
   * (queued behind earlier writes). Resolves once written: `true`, or `false` when there is
   * nothing to write, the store has no checkpoint methods, or a rebuild made it obsolete. With
   * `report`, a failed write rejects; otherwise it goes to `onWriteError` and resolves `false`.
   */
  checkpoint(report: boolean): Promise<boolean> {
    const head = this.#head;
    const eventId = this.#lastEventId;
    if (!this.#writesCheckpoints || head === null || eventId === null || this.projector.failed || this.projector.needsFullFold) {
      return Promise.resolve(false);
    }
    const captureStart = systemTime.monotonicNow();
    const { state, ids } = this.projector.checkpointState();
    const content: CheckpointContent = {
      sessionId: this.sessionId,
      sequence: head,
      eventId,
      projectorVersion: DURABLE_PROJECTOR_VERSION,
      anchor: this.#anchorEvent === null ? this.#anchor : anchorOf(this.#anchorEvent),
      digest: this.#digest,
      state,
      commands: this.index.toCheckpoint(this.checkpoints.keepCommands),
    };
    this.#sinceEvents = 0;
    this.#sinceBytes = 0;
    // The projector goes on adding to its own set: a live checkpoint keeps a fork nobody adds to.
    const write = this.#live ? this.#writeLive({ ...content, ids: ids.fork() }, captureStart) : this.#writeRecord(content, ids.drainAdds(), captureStart);
    this.#writes = write.then(
      () => undefined,
      () => undefined,
    );
    if (report) return write;
    return write.catch((error: unknown) => {
      this.checkpoints.onWriteError?.(error);
      return false;
    });
  }

  /** Encodes `content` with the `drained` new IDs and writes the record, after the earlier writes and the current task. */
  #writeRecord(content: CheckpointContent, drained: string[], captureStart: number): Promise<boolean> {
    const clock = systemTime;
    const captureMs = clock.monotonicNow() - captureStart;
    const generation = this.#generation;
    return this.#writes.then(async () => {
      await nextTask();
      if (generation !== this.#generation) return false;
      const encodeStart = clock.monotonicNow();
      // SAFETY: #writesCheckpoints checked the capability.
      const store = this.store as unknown as DurableCheckpointStore;
      const { record, keys } = this.#encode(content, sortedHashes(drained), this.#extends);
      this.#filter = keys;
      const storeStart = clock.monotonicNow();
      await this.call(undefined, (callSignal) => store.writeCheckpoint(this.sessionId, record, { signal: callSignal }), 'checkpoint write');
      this.#reportWrite({
        sequence: content.sequence,
        bytes: record.data.length,
        keys: keys.size,
        addedKeys: drained.length,
        captureMs,
        encodeMs: storeStart - encodeStart,
        storeMs: clock.monotonicNow() - storeStart,
      });
      return true;
    });
  }

  /** Hands a live checkpoint to the store (`../checkpoint/live.ts`), after the earlier writes. */
  #writeLive(checkpoint: DurableLiveCheckpoint, captureStart: number): Promise<boolean> {
    const clock = systemTime;
    const keys = checkpoint.ids.size;
    const addedKeys = Math.max(0, keys - this.#liveKeys);
    this.#liveKeys = keys;
    const captureMs = clock.monotonicNow() - captureStart;
    const generation = this.#generation;
    return this.#writes.then(async () => {
      if (generation !== this.#generation) return false;
      // SAFETY: #live checked the capability.
      const store = this.store as unknown as DurableLiveCheckpointStore;
      const storeStart = clock.monotonicNow();
      await this.call(undefined, (callSignal) => store.writeLiveCheckpoint(this.sessionId, checkpoint, { signal: callSignal }), 'checkpoint write');
      this.#reportWrite({ sequence: checkpoint.sequence, bytes: 0, keys, addedKeys, captureMs, encodeMs: 0, storeMs: clock.monotonicNow() - storeStart });
      return true;
    });
  }

  /** Calls `onWrite`; a throwing metrics hook is not a failed write: it is reported like one and ignored. */
  #reportWrite(info: DurableCheckpointWriteInfo): void {
    try {
      this.checkpoints.onWrite?.(info);
    } catch (error) {
      this.checkpoints.onWriteError?.(error);
    }
  }

  /**
   * Encodes the next record: a frame appended to the previous record when the store keeps
   * extensions and the record would stay within twice its live bytes, else one compacted frame.
   * The previous record's write settled before this runs (writes are queued) and stores keep
   * copies, so its buffer is free: an extension writes past its end (or copies it into a larger
   * buffer), a compaction writes into the spare buffer. Encodings alternate between two buffers.
   */
  #encode(checkpoint: CheckpointContent, fresh: Float64Array, extend: boolean): { record: DurableCheckpointRecord; keys: HashedKeyFilter } {
    const previous = this.#record;
    if (extend && previous !== null) {
      const base = previous.bytes;
      const encoded = encodeExtension(checkpoint, previous.extent, base, fresh, (bytes) => {
        if (this.#ownsRecord && base.buffer.byteLength - base.byteOffset >= bytes) return new Uint8Array(base.buffer, base.byteOffset);
        const buffer = this.#takeSpare(bytes);
        const room = new Uint8Array(buffer);
        room.set(base.subarray(0, previous.extent.length));
        if (this.#ownsRecord) this.#spareBuffer = base.buffer as ArrayBuffer;
        return room;
      });
      if (encoded !== null) {
        this.#record = { bytes: encoded.record.data, extent: encoded.extent };
        this.#ownsRecord = true;
        return { record: { ...encoded.record, extendsBytes: previous.extent.length }, keys: encoded.keys };
      }
    }
    const encoded = encodeCompacted(checkpoint, [...this.#filter.runs, fresh], (bytes) => this.#takeSpare(bytes));
    // The previous record's buffer (its write settled, stores keep copies) is the next spare.
    if (this.#ownsRecord && previous !== null) this.#spareBuffer = previous.bytes.buffer as ArrayBuffer;
    this.#record = { bytes: encoded.record.data, extent: encoded.extent };
    this.#ownsRecord = true;
    return { record: encoded.record, keys: encoded.keys };
  }

  /** The spare buffer when it holds `bytes`, else a new one (see `reuseCheckpointBuffer`). */
  #takeSpare(bytes: number): ArrayBuffer {
    const spare = this.#spareBuffer;
    this.#spareBuffer = null;
    return reuseCheckpointBuffer(spare, bytes);
  }

  /** Resolves once every queued checkpoint write settled. */
  async flushCheckpoints(): Promise<void> {
    await this.#writes;
  }

  /** Reads a contiguous command range back from the store, checking every event belongs to it. */
  async readRange(range: CommandRange, signal: AbortSignal | undefined): Promise<DurableEventEnvelope[]> {
    const events: DurableEventEnvelope[] = [];
    let next: number = range.firstSequence;
    while (next <= range.lastSequence) {
      const after = next > 1 ? EventSequence(next - 1) : undefined;
      const limit = Math.min(MAX_READ_LIMIT, range.lastSequence - next + 1);
      const page = await this.call(
        signal,
        (callSignal) => this.store.read(this.sessionId, { after, limit, signal: callSignal }),
        'read',
      );
      if (page.events.length === 0) {
        throw journalError(`the store no longer returns command ${range.commandId} at sequence ${next}`);
      }
      for (const event of page.events) {
        if (event.sequence !== next || event.commandId !== range.commandId || event.sessionId !== this.sessionId) {
          throw journalError(`the log changed under command ${range.commandId}: sequence ${next} is not one of its events`, {
            commandId: range.commandId,
            sequence: next,
          });
        }
        events.push(event);
        next += 1;
        if (next > range.lastSequence) break;
      }
    }
    return events;
  }
}
