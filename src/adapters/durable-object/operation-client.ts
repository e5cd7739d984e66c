/**
 * The one RPC client of the session operations (`SESSION_OPERATIONS`), used by the Worker's
 * routes, `sessionClient` and `DurableObjectEventStore`.
 *
 * 1. It calls the object's one RPC entry, `operation(sessionId, name, input)`, which answers with
 *    an `RpcResult` envelope.
 * 2. The envelope is unwrapped; a failure is rethrown as the original error class and code.
 * 3. A call that fails in transit (object reset, overload, an argument that cannot cross RPC)
 *    is reported by the row's kind (`operationOutcomeUnknown`): a read is unavailable, a write's or
 *    a command's outcome is unknown.
 * An `AbortSignal` cannot cross RPC: an aborted signal stops the call before it is sent, and an
 * abort while the call runs rejects at once (the object may still complete it).
 */
import { abortReason, throwIfAborted } from '../../core/abort.js';
import { isDurableError } from '../../protocol/errors.js';
import {
  operationOutcomeUnknown,
  type OperationInput,
  type OperationName,
  type OperationOutput,
} from '../../core/operations/operations.js';
import { unwrapRpcResult, type SessionObjectOperationRpc } from './rpc.js';

/** What a failed transport is called in the error message. */
const NO_ANSWER = 'the session object did not answer';

/**
 * Runs operation `name` on the session object `stub` (a stub of `SessionObject` or a subclass)
 * and resolves with its output, or rejects with its typed error. See the module header.
 */
export async function callOperation<N extends OperationName>(
  stub: object,
  sessionId: string,
  name: N,
  input: OperationInput<N>,
  signal?: AbortSignal,
): Promise<OperationOutput<N>> {
  throwIfAborted(signal);
  // SAFETY: the stub of a SessionObject forwards its public `operation` method.
  const object = stub as SessionObjectOperationRpc;
  const pending = (async () => {
    try {
      return await object.operation(sessionId, name, input);
    } catch (cause) {
      if (isDurableError(cause)) throw cause;
      throw operationOutcomeUnknown(name, input, NO_ANSWER, cause);
    }
  })();
  if (signal === undefined) return unwrapRpcResult<OperationOutput<N>>(await pending);
  let detach: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    detach = () => signal.removeEventListener('abort', onAbort);
  });
  // A late settlement of the RPC after an abort must not surface as an unhandled rejection.
  pending.catch(() => undefined);
  try {
    return unwrapRpcResult<OperationOutput<N>>(await Promise.race([pending, aborted]));
  } finally {
    detach?.();
  }
}
