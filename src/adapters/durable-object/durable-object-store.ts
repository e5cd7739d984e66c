/**
 * DurableObjectEventStore: the store contract for code running in a Worker with a SessionObject
 * namespace binding.
 *
 * 1. Each call addresses the session's object: `namespace.get(namespace.idFromName(sessionId))`.
 * 2. It runs the matching row of `SESSION_OPERATIONS` through `callOperation`, the object's one
 *    RPC entry. An append validates its drafts here first, sends them as JSON text (`appendJson`)
 *    and is answered with a compact receipt, from which the stored envelopes are rebuilt
 *    (`append-receipt.ts`).
 * 3. A failure is rethrown as the original error class and code. A failed RPC transport is
 *    reported by the row's kind: `DURABLE_EVENT_WRITE_FAILED` for an append or a durability write
 *    (outcome unknown), `DURABLE_EXECUTION_LEASE_TIMEOUT` with its `leaseId` for a lease write,
 *    `DURABLE_EVENT_UNAVAILABLE` for a read.
 * An `AbortSignal` cannot cross RPC: an aborted signal stops the call before it is sent, and an
 * abort while the call runs rejects at once (the object may still complete it; as with any
 * uncertain outcome, read the head before retrying an append).
 */
import { throwIfAborted } from '../../core/abort.js';
import type {
  DurabilityRecordStore,
  DurabilityReadOptions,
  DurabilityReadResult,
  DurabilityRecordDraft,
  DurabilityRecordResult,
} from '../../core/durability/record-contract.js';
import { validateDurabilityDraft } from '../../core/durability/record-engine.js';
import { checkSessionId } from '../../core/log-engine.js';
import type {
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
} from '../../core/store.js';
import type { DurableEventDraft } from '../../protocol/events.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import { appendThroughObject } from './append-receipt.js';
import {
  checkCheckpointRecord,
  checkpointExtensionOf,
  readCheckpointSlices,
  writeWholeCheckpoint,
  type DurableCheckpointRecord,
  type DurableCheckpointStore,
} from '../../core/checkpoint/contract.js';
import type { SessionObjectRpc } from './rpc.js';
import { callOperation } from './operation-client.js';
import type { OperationInput, OperationName, OperationOutput } from '../../core/operations/operations.js';

/**
 * The part of `DurableObjectNamespace<SessionObject>` this store uses, kept structural so that
 * `src/` needs no Workers types. `get` is declared loosely: checking the Workers RPC stub type of
 * SessionObject against a precise shape exceeds the compiler's instantiation depth (TS2589).
 */
export interface SessionObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: never): object;
}

/**
 * The SessionObject of `sessionId`, typed as {@link SessionObjectRpc}. Prefer this over calling
 * methods on `namespace.get(...)` directly: the Workers stub type of these methods is too deep for
 * the compiler (TS2589). Results are envelopes; pass them to `unwrapRpcResult`.
 *
 * @example
 * const result = unwrapRpcResult<DurableReadResult>(await sessionObjectRpc(env.SESSIONS, sessionId).read(sessionId, {}));
 */
export function sessionObjectRpc(namespace: SessionObjectNamespaceLike, sessionId: string): SessionObjectRpc {
  // SAFETY: `get` accepts exactly what `idFromName` of the same namespace returns, and the
  // namespace is a SessionObject binding, whose stubs expose the SessionObjectRpc methods (each
  // call returns an awaitable of the envelope).
  return namespace.get(namespace.idFromName(sessionId) as never) as SessionObjectRpc;
}

/**
 * {@link DurableEventStore} and {@link DurableExecutionLeaseStore} over a SessionObject namespace.
 *
 * @example
 * export default {
 *   async fetch(request: Request, env: { SESSIONS: DurableObjectNamespace<SessionObject> }) {
 *     const store = new DurableObjectEventStore(env.SESSIONS);
 *     const journal = await DurableSessionJournal.open(store, SessionId('session-1'));
 *     // ...
 *   },
 * };
 */
export class DurableObjectEventStore
  implements DurableEventStore, DurableExecutionLeaseStore, DurabilityRecordStore, DurableCheckpointStore
{
  readonly #namespace: SessionObjectNamespaceLike;

  constructor(namespace: SessionObjectNamespaceLike) {
    this.#namespace = namespace;
  }

  /** Runs a row of `SESSION_OPERATIONS` on the session's object (see `operation-client.ts`). */
  async #operation<N extends OperationName>(
    signal: AbortSignal | undefined,
    sessionId: SessionId,
    name: N,
    input: OperationInput<N>,
  ): Promise<OperationOutput<N>> {
    throwIfAborted(signal);
    const id = checkSessionId(sessionId);
    return callOperation(sessionObjectRpc(this.#namespace, id), id, name, input, signal);
  }

  /**
   * Validates the drafts here first (the object validates them again), sends the validated
   * drafts as JSON text and rebuilds the stored envelopes from the object's compact receipt (see
   * `append-receipt.ts`): only event IDs, sequences and the commit time travel back.
   */
  async append(
    sessionId: SessionId,
    drafts: readonly DurableEventDraft[],
    options?: DurableAppendOptions,
  ): Promise<DurableAppendResult> {
    // Same order of refusals as the object: an aborted call, the session ID, then the drafts.
    throwIfAborted(options?.signal);
    const id = checkSessionId(sessionId);
    const rpcOptions = {
      ...(options?.expectedLastSequence === undefined ? {} : { expectedLastSequence: options.expectedLastSequence }),
      ...(options?.executionFence === undefined ? {} : { executionFence: plainFence(options.executionFence) }),
    };
    return appendThroughObject(sessionObjectRpc(this.#namespace, id), id, drafts, rpcOptions, options?.signal);
  }

  read(sessionId: SessionId, options?: DurableReadOptions): Promise<DurableReadResult> {
    const rpcOptions = {
      ...(options?.after === undefined ? {} : { after: options.after }),
      ...(options?.limit === undefined ? {} : { limit: options.limit }),
      ...(options?.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
    };
    return this.#operation(options?.signal, sessionId, 'read', rpcOptions);
  }

  getHeadSequence(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<EventSequence | null> {
    return this.#operation(options?.signal, sessionId, 'getHeadSequence', {});
  }

  /** The session's latest projection checkpoint, kept by its object. */
  async readCheckpoint(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableCheckpointRecord | null> {
    // In slices: a record may be larger than one RPC value.
    return readCheckpointSlices((offset) => this.#operation(options?.signal, sessionId, 'readCheckpoint', { offset }));
  }

  /**
   * The object keeps extended records: a record that extends the stored one sends only its new
   * bytes (`extendCheckpoint`), and the whole record when the object no longer holds that prefix.
   */
  readonly checkpointExtension = true;

  /**
   * Replaces the session's projection checkpoint in its object. A record that extends the stored
   * one crosses as its tail (see {@link checkpointExtension}); a whole record in one RPC value, or
   * in slices of 16 MiB when it is larger (one RPC value is at most 32 MiB).
   */
  async writeCheckpoint(sessionId: SessionId, record: DurableCheckpointRecord, options?: DurableStoreCallOptions): Promise<void> {
    throwIfAborted(options?.signal);
    const checked = checkCheckpointRecord(record, false);
    const extension = checkpointExtensionOf(checked);
    if (extension !== null) {
      const tail = { ...extension, tail: extension.tail.slice() };
      if (await this.#operation(options?.signal, sessionId, 'extendCheckpoint', tail)) return;
    }
    // A view would carry its whole buffer across RPC: the whole record goes as a copy (slices are copies).
    await writeWholeCheckpoint(
      { sequence: checked.sequence, eventId: checked.eventId, data: checked.data },
      (record) => this.#operation(options?.signal, sessionId, 'writeCheckpoint', { ...record, data: record.data.slice() }),
      (slice) => this.#operation(options?.signal, sessionId, 'writeCheckpointSlice', slice),
    );
  }

  /**
   * Waits (server-side long poll, at most 30 s per call) until the head passes `after`; returns
   * the head then, or the unchanged head when `waitMs` elapsed.
   */
  waitForEvents(
    sessionId: SessionId,
    after: EventSequence | null,
    waitMs: number,
    options?: DurableStoreCallOptions,
  ): Promise<{ headSequence: EventSequence | null }> {
    return this.#operation(options?.signal, sessionId, 'waitForEvents', { after, waitMs });
  }

  acquireExecutionLease(sessionId: SessionId, options: DurableLeaseAcquireOptions): Promise<DurableExecutionLeaseRecord> {
    const input = { ownerId: options.ownerId, leaseId: options.leaseId, ttlMs: options.ttlMs };
    return this.#operation(options.signal, sessionId, 'acquireExecutionLease', input);
  }

  renewExecutionLease(
    sessionId: SessionId,
    fence: DurableExecutionFence,
    options: DurableLeaseRenewOptions,
  ): Promise<DurableExecutionLeaseRecord> {
    return this.#operation(options.signal, sessionId, 'renewExecutionLease', { fence: plainFence(fence), ttlMs: options.ttlMs });
  }

  async releaseExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options?: DurableStoreCallOptions): Promise<void> {
    await this.#operation(options?.signal, sessionId, 'releaseExecutionLease', { fence: plainFence(fence) });
  }

  async assertExecutionLease(sessionId: SessionId, fence: DurableExecutionFence, options?: DurableStoreCallOptions): Promise<void> {
    await this.#operation(options?.signal, sessionId, 'assertExecutionLease', { fence: plainFence(fence) });
  }

  inspectExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableExecutionLeaseRecord | null> {
    return this.#operation(options?.signal, sessionId, 'inspectExecutionLease', {});
  }

  requiresExecutionLease(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<boolean> {
    return this.#operation(options?.signal, sessionId, 'requiresExecutionLease', {});
  }

  /**
   * Records in the session's durability records (inside its object). The draft is validated here
   * first: structured cloning would turn an accessor into a plain value the object could not refuse.
   * A failed transport is `DURABLE_EVENT_WRITE_FAILED` (the record may exist: recording it again
   * is idempotent).
   */
  async recordDurability(
    sessionId: SessionId,
    draft: DurabilityRecordDraft,
    options?: DurableStoreCallOptions,
  ): Promise<DurabilityRecordResult> {
    throwIfAborted(options?.signal);
    return this.#operation(options?.signal, sessionId, 'recordDurability', validateDurabilityDraft(draft));
  }

  /** Reads one page of the session's durability records. (No `watchDurability`: RPC has no push.) */
  async readDurability(sessionId: SessionId, options?: DurabilityReadOptions): Promise<DurabilityReadResult> {
    const rpcOptions = {
      ...(options?.after === undefined ? {} : { after: options.after }),
      ...(options?.limit === undefined ? {} : { limit: options.limit }),
    };
    return this.#operation(options?.signal, sessionId, 'readDurability', rpcOptions);
  }
}

/** Only the three fence fields cross RPC (a caller's object may carry more, e.g. methods). */
function plainFence(fence: DurableExecutionFence): DurableExecutionFence {
  if (typeof fence !== 'object' || fence === null) return fence;
  return { leaseId: fence.leaseId, ownerId: fence.ownerId, fencingToken: fence.fencingToken };
}
