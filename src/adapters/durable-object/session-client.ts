/**
 * `sessionClient`: the session object over RPC, for user code, with plain values and typed errors.
 *
 * The object's RPC methods answer with `RpcResult` envelopes (domain errors lose their class and
 * fields when thrown across Durable Object RPC, so the envelope carries them as JSON). That is a
 * transport detail: {@link sessionClient} binds one session, unwraps every answer and rethrows
 * failures as the original error classes with their codes. A call that fails in transit (object
 * reset, overload) throws the error of an uncertain outcome:
 * - commands (`commit`, `recover`: rows of kind `command` in `SESSION_OPERATIONS`, run through
 *   `callOperation`): `DurableCommandOutcomeUnknownError` (resubmit the same command);
 * - lease writes (`acquireExecutionLease`, renew, release, assert): `DURABLE_EXECUTION_LEASE_TIMEOUT`
 *   with the `leaseId` (the rule of their rows in `SESSION_OPERATIONS`, see `operation-client.ts`);
 * - other writes (`append`, durability writes): `DURABLE_EVENT_WRITE_FAILED`;
 * - reads: `DURABLE_EVENT_UNAVAILABLE`.
 *
 * Runtime-neutral (no `cloudflare:*`): the namespace is structural.
 *
 * @example
 * const session = sessionClient(env.AGENTS, SessionId('session-1'));
 * const { recoveryPlan } = await session.projection();
 * await session.recover('resolvePermission', { commandId, permissionRequestId, decision: 'allow' });
 */
import { DurableEventStoreError, type DurableError } from '../../protocol/errors.js';
import type { DurableAppendResult } from '../../core/store.js';
import type { DurableEventDraft } from '../../protocol/events.js';
import type { SessionId } from '../../protocol/ids.js';
import { isRecoveryOperation, type RecoveryOperation } from '../../protocol/recovery-operations.js';
import type { SessionObjectNamespaceLike } from './durable-object-store.js';
import type { RecoveryInputs, RecoveryResults, RpcJournalCallOptions, SessionObjectJournalRpc } from './journal-rpc.js';
import { unwrapRpcResult, type RpcAppendOptions, type RpcResult, type SessionObjectRpc } from './rpc.js';
import { appendThroughObject } from './append-receipt.js';
import { callOperation } from './operation-client.js';
import { isOperationName, recoveryRowInput, SESSION_OPERATIONS, type OperationSpec } from '../../core/operations/operations.js';

/** Every RPC method of the session object. */
type SessionObjectRpcMethods = SessionObjectRpc & SessionObjectJournalRpc;

/** One RPC method without its leading `sessionId` and its envelope. */
type Unwrapped<M> = M extends (sessionId: string, ...args: infer A) => Promise<RpcResult<infer R>>
  ? (...args: A) => Promise<R>
  : never;

/**
 * The session object's RPC methods bound to one session: each takes the method's arguments after
 * `sessionId` and resolves with the plain value (or rejects with the typed error).
 */
export type SessionObjectClient = {
  readonly [K in Exclude<keyof SessionObjectRpcMethods, 'recover'>]: Unwrapped<SessionObjectRpcMethods[K]>;
} & {
  /** The session this client is bound to. */
  readonly sessionId: SessionId;
  /**
   * Appends one atomic batch through the object's `appendJson` (the drafts validated here, the
   * stored batch rebuilt from the object's receipt: see `append-receipt.ts`).
   */
  append(drafts: readonly DurableEventDraft[], options?: RpcAppendOptions): Promise<DurableAppendResult>;
  /** Runs one recovery operation (a row of `RECOVERY_OPERATIONS`) on the session's coordinator. */
  recover<O extends RecoveryOperation>(
    operation: O,
    input: RecoveryInputs[O],
    options?: RpcJournalCallOptions,
  ): Promise<RecoveryResults[O]>;
};

function transportFailure(method: string, cause: unknown): DurableError {
  return new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `${method}: the session object did not answer`, { cause });
}

/**
 * The session object of `sessionId` in `namespace` (a `DurableObjectNamespace` of `SessionObject`
 * or a subclass), with plain results and typed errors. See the module header.
 */
export function sessionClient(namespace: SessionObjectNamespaceLike, sessionId: SessionId): SessionObjectClient {
  // SAFETY: `get` accepts what `idFromName` of the same namespace returns; the stub forwards the
  // SessionObject's public methods, each answering with an envelope.
  const stub = namespace.get(namespace.idFromName(sessionId) as never) as unknown as Record<
    string,
    (...args: unknown[]) => Promise<unknown>
  >;
  const methods = new Map<string, (...args: unknown[]) => Promise<unknown>>();
  const call =
    (method: string) =>
    async (...args: unknown[]): Promise<unknown> => {
      if (method === 'append') {
        // SAFETY: the arguments of `SessionObjectClient.append`; the drafts are validated before sending.
        return appendThroughObject(stub, sessionId, args[0] as readonly DurableEventDraft[], args[1] as RpcAppendOptions | undefined);
      }
      if (method === 'recover') {
        const [operation, input, options] = args;
        if (!isRecoveryOperation(operation)) {
          throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `unknown recovery operation ${JSON.stringify(String(operation))}`);
        }
        return callOperation(stub, sessionId, operation, recoveryRowInput(input, options) as never);
      }
      if (isOperationName(method)) {
        const row: OperationSpec = SESSION_OPERATIONS[method];
        const input = row.rpcArgs === undefined ? args[0] : (row.rpcArgs as (...a: unknown[]) => unknown)(...args);
        return callOperation(stub, sessionId, method, input as never);
      }
      let result: unknown;
      try {
        // A member call: on a Workers RPC stub, `stub[method].call(...)` would name a remote `call`.
        result = await stub[method]!(sessionId, ...args);
      } catch (cause) {
        throw transportFailure(method, cause);
      }
      return unwrapRpcResult(result);
    };
  // SAFETY: every property but `sessionId` is an RPC method of the object (see SessionObjectRpcMethods);
  // a Proxy keeps the list in one place (the interfaces) instead of a hand-written wrapper per method.
  return new Proxy({} as SessionObjectClient, {
    get(_target, property) {
      if (property === 'sessionId') return sessionId;
      if (typeof property !== 'string' || property === 'then') return undefined;
      let method = methods.get(property);
      if (method === undefined) {
        method = call(property);
        methods.set(property, method);
      }
      return method;
    },
  });
}
