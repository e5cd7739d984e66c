/**
 * The session object's event-log operations (rows with `host: 'log'` of `SESSION_OPERATIONS`):
 * the append (JSON text in, a compact receipt out), reads, the head and its long poll, the
 * execution lease, whose fences the log checks in the one transaction of every append, and the
 * stored per-event digests.
 *
 * Input over RPC is an untrusted shape: each method passes it on and the log engine checks the
 * fields it uses (drafts, owner, lease id, TTL, fence, read bounds), with its own error codes.
 */
import { appendReceiptOf } from '../adapters/durable-object/append-receipt.js';
import { MAX_WAIT_FOR_EVENTS_MS, type RpcAppendOptions } from '../adapters/durable-object/rpc.js';
import type { SqlEventLog } from '../adapters/sql/sql-event-log.js';
import type { DurableExecutionFence, DurableLeaseAcquireOptions } from '../core/store.js';
import { DurableEventStoreError } from '../protocol/errors.js';
import type { SessionId } from '../protocol/ids.js';
import { MAX_READ_LIMIT } from '../protocol/limits.js';
import type { OperationHosts, OperationInput, OperationOutput } from '../core/operations/operations.js';
import { isPast, type HeadWaiters } from './waiters.js';

function invalidInput(message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', message);
}

/** Only the three fence fields reach the engine (a lease record or a caller's object carries more). */
function fenceOf(input: unknown): DurableExecutionFence {
  const fence = typeof input === 'object' && input !== null ? (input as { fence?: unknown }).fence : undefined;
  if (typeof fence !== 'object' || fence === null) {
    // SAFETY: the engine refuses a missing fence with DURABLE_EXECUTION_LEASE_INVALID.
    return fence as unknown as DurableExecutionFence;
  }
  const { leaseId, ownerId, fencingToken } = fence as DurableExecutionFence;
  return { leaseId, ownerId, fencingToken };
}

function fieldOf(input: unknown, key: string): unknown {
  return typeof input === 'object' && input !== null ? (input as Record<string, unknown>)[key] : undefined;
}

/**
 * Serves the log rows; `waiters` are the object's long polls (settled after every commit),
 * `afterRelease` runs after a lease release (a parked agent may go on).
 */
export class EventLogHost implements Readonly<OperationHosts['log']> {
  constructor(
    private readonly log: () => SqlEventLog,
    private readonly waiters: HeadWaiters,
    private readonly afterRelease: () => void,
  ) {}

  appendJson(sessionId: SessionId, input: OperationInput<'appendJson'>): OperationOutput<'appendJson'> {
    const options = fieldOf(input, 'options') ?? {};
    if (typeof options !== 'object') throw invalidInput('append options must be an object');
    const { expectedLastSequence, executionFence } = options as RpcAppendOptions;
    const checked = {
      ...(expectedLastSequence === undefined ? {} : { expectedLastSequence }),
      ...(executionFence === undefined ? {} : { executionFence }),
    };
    // SAFETY: the log refuses anything but JSON text of a draft batch.
    return appendReceiptOf(this.log().appendJson(sessionId, fieldOf(input, 'draftsJson') as string, checked));
  }

  read(sessionId: SessionId, input: OperationInput<'read'>): OperationOutput<'read'> {
    if (typeof input !== 'object' || input === null) throw invalidInput('read options must be an object');
    return this.log().read(sessionId, { after: input.after, limit: input.limit, maxBytes: input.maxBytes });
  }

  getHeadSequence(sessionId: SessionId): OperationOutput<'getHeadSequence'> {
    return this.log().getHeadSequence(sessionId);
  }

  async waitForEvents(sessionId: SessionId, input: OperationInput<'waitForEvents'>): Promise<OperationOutput<'waitForEvents'>> {
    const after = fieldOf(input, 'after');
    const waitMs = fieldOf(input, 'waitMs');
    if (after !== null && (typeof after !== 'number' || !Number.isSafeInteger(after) || after < 1)) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_CURSOR', 'after must be null or an integer sequence >= 1');
    }
    if (typeof waitMs !== 'number' || !Number.isSafeInteger(waitMs) || waitMs < 0 || waitMs > MAX_WAIT_FOR_EVENTS_MS) {
      throw invalidInput(`waitMs must be an integer in 0..${MAX_WAIT_FOR_EVENTS_MS}`);
    }
    const head = this.log().getHeadSequence(sessionId);
    if (after !== null && (head === null || after > head)) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_CURSOR', `cursor ${after} is ahead of the head ${String(head)}`, {
        details: { after, headSequence: head },
      });
    }
    if (isPast(head, after) || waitMs === 0) return { headSequence: head };
    return { headSequence: await this.waiters.wait(after, waitMs, () => this.log().getHeadSequence(sessionId)) };
  }

  acquireExecutionLease(sessionId: SessionId, input: OperationInput<'acquireExecutionLease'>): OperationOutput<'acquireExecutionLease'> {
    const request = { ownerId: fieldOf(input, 'ownerId'), leaseId: fieldOf(input, 'leaseId'), ttlMs: fieldOf(input, 'ttlMs') };
    // SAFETY: the log engine validates ownerId, leaseId and ttlMs at run time.
    return this.log().acquireExecutionLease(sessionId, request as DurableLeaseAcquireOptions);
  }

  renewExecutionLease(sessionId: SessionId, input: OperationInput<'renewExecutionLease'>): OperationOutput<'renewExecutionLease'> {
    // SAFETY: the log engine validates the TTL at run time (an undefined TTL is refused).
    return this.log().renewExecutionLease(sessionId, fenceOf(input), fieldOf(input, 'ttlMs') as number);
  }

  releaseExecutionLease(sessionId: SessionId, input: OperationInput<'releaseExecutionLease'>): null {
    this.log().releaseExecutionLease(sessionId, fenceOf(input));
    this.afterRelease();
    return null;
  }

  assertExecutionLease(sessionId: SessionId, input: OperationInput<'assertExecutionLease'>): null {
    this.log().assertExecutionLease(sessionId, fenceOf(input));
    return null;
  }

  inspectExecutionLease(sessionId: SessionId): OperationOutput<'inspectExecutionLease'> {
    return this.log().inspectExecutionLease(sessionId);
  }

  requiresExecutionLease(sessionId: SessionId): boolean {
    return this.log().requiresExecutionLease(sessionId);
  }

  leaseState(sessionId: SessionId): OperationOutput<'leaseState'> {
    return { lease: this.inspectExecutionLease(sessionId), requiresExecutionLease: this.requiresExecutionLease(sessionId) };
  }

  /** The stored digest of each event after `after` (default 0), at most `limit` (default and maximum 1000). */
  readEventDigests(sessionId: SessionId, input: OperationInput<'readEventDigests'>): OperationOutput<'readEventDigests'> {
    const after = fieldOf(input, 'after') ?? 0;
    const limit = fieldOf(input, 'limit') ?? MAX_READ_LIMIT;
    if (typeof limit !== 'number' || limit > MAX_READ_LIMIT) {
      throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', `limit must be an integer in 1..${MAX_READ_LIMIT}`);
    }
    // SAFETY: the log validates `after` (an integer >= 0) at run time.
    return { digests: this.log().readEventDigests(sessionId, after as number, limit) };
  }
}
