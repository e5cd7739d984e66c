/**
 * The SessionObject's RPC surface, runtime-neutral (no `cloudflare:*` imports).
 *
 * Errors thrown inside a Durable Object lose their class and fields on the way through RPC, so
 * every method returns an {@link RpcResult} envelope instead of throwing: `{ ok: true, value }` or
 * `{ ok: false, error }` with the error's JSON form. Callers turn it back into the same error class
 * with {@link unwrapRpcResult} (which uses `durableErrorFromJson`). The Worker routes and
 * `DurableObjectEventStore` both program against {@link SessionObjectRpc}.
 */
import {
  DurableError,
  DurableEventStoreError,
  durableErrorFromJson,
  type DurableErrorJson,
} from '../../protocol/errors.js';
import type { WorkerId } from '../../protocol/ids.js';
import type { OperationInput, OperationOutput, PositionalArgs, PositionalOperationName } from '../../core/operations/operations.js';

/** Outcome of one RPC call: a value, or a domain error in its wire form. */
export type RpcResult<T> = { ok: true; value: T } | { ok: false; error: DurableErrorJson };

/** Append options that cross RPC (an `AbortSignal` cannot). */
export type RpcAppendOptions = NonNullable<OperationInput<'appendJson'>['options']>;

/**
 * What the append RPC (`appendJson`) answers: the store-assigned part of an append result
 * (head before, last sequence, the event IDs joined by `\n`, the commit time). The caller rebuilds
 * the envelopes from the drafts it sent (see `append-receipt.ts`).
 */
export type RpcAppendReceipt = OperationOutput<'appendJson'>;

/** Read options that cross RPC (`after`, `limit`, `maxBytes`). */
export type RpcReadOptions = OperationInput<'read'>;

/** Lease acquisition options that cross RPC. */
export interface RpcLeaseAcquireOptions {
  ownerId: WorkerId;
  leaseId: string;
  ttlMs: number;
}

/** Result of the long poll `waitForEvents`: the head when the wait ended (an event after `after` exists iff `headSequence > after`). */
export type RpcWaitResult = OperationOutput<'waitForEvents'>;

/**
 * The object's one RPC entry for the rows of `SESSION_OPERATIONS`: runs operation `name` with
 * `input` on the row's host. Call it through `callOperation` (`operation-client.ts`).
 */
export interface SessionObjectOperationRpc {
  operation(sessionId: string, name: string, input: unknown): Promise<RpcResult<unknown>>;
}

/**
 * The positional RPC methods derived from the rows with `rpcArgs` (e.g.
 * `acquireExecutionLease(sessionId, options)`): each runs its row through `operation`.
 */
export type SessionObjectPositionalRpc = {
  [N in PositionalOperationName]: (sessionId: string, ...args: PositionalArgs<N>) => Promise<RpcResult<OperationOutput<N>>>;
};

/** Longest `waitMs` the object accepts for one long poll. */
export const MAX_WAIT_FOR_EVENTS_MS = 30_000;

/**
 * The typed RPC methods of the per-session Durable Object: the one operation entry and the
 * positional methods of the rows (`appendJson`, `read`, `getHeadSequence`, `waitForEvents`, the
 * lease calls...). Every method names the session it means; the object serves exactly one
 * session and refuses any other with `DURABLE_EVENT_INVALID_INPUT`.
 */
export interface SessionObjectRpc extends SessionObjectOperationRpc, SessionObjectPositionalRpc {}

/** A success envelope. */
function rpcOk<T>(value: T): RpcResult<T> {
  return { ok: true, value };
}

/**
 * A failure envelope. A domain error keeps its code, message and details; anything else (a bug
 * or a runtime failure) becomes `DURABLE_EVENT_UNAVAILABLE` so the caller still gets a classified
 * error.
 */
function rpcFailure(error: unknown): { ok: false; error: DurableErrorJson } {
  if (error instanceof DurableError) return { ok: false, error: error.toJSON() };
  const message = error instanceof Error ? error.message : String(error);
  return {
    ok: false,
    error: new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `session object failed: ${message}`).toJSON(),
  };
}

/** Runs `fn` and wraps its outcome (value or thrown error) in an envelope. */
export async function toRpcResult<T>(fn: () => T | Promise<T>): Promise<RpcResult<T>> {
  try {
    return rpcOk(await fn());
  } catch (error) {
    return rpcFailure(error);
  }
}

/**
 * Returns the value of an envelope, or throws the error it carries rebuilt as its original class.
 * Anything that is not an envelope throws `DURABLE_EVENT_UNAVAILABLE`.
 */
export function unwrapRpcResult<T>(result: unknown): T {
  if (typeof result === 'object' && result !== null) {
    const envelope = result as { ok?: unknown; value?: unknown; error?: unknown };
    if (envelope.ok === true && 'value' in envelope) {
      // SAFETY: the envelope comes from a SessionObject method whose result type is T.
      return envelope.value as T;
    }
    if (envelope.ok === false && typeof envelope.error === 'object' && envelope.error !== null) {
      throw durableErrorFromJson(envelope.error as DurableErrorJson);
    }
  }
  throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object returned a malformed RPC result');
}
