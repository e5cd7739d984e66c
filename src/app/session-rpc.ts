/**
 * The app's side of the session object's RPC.
 *
 * 1. {@link sessionObject} finds the one `SessionObject` of a session (`idFromName(sessionId)` on
 *    the namespace the app was configured with).
 * 2. {@link callObject} runs one RPC: a `{ ok: true, value }` result yields the value, a
 *    `{ ok: false, error }` result is rebuilt into the same domain error class (so the route's
 *    problem+json keeps the code), and an exception thrown by the RPC transport itself (object
 *    reset, overload, network) becomes the domain error the caller chose for an uncertain outcome
 *    (for an append that is `DURABLE_EVENT_WRITE_FAILED`: it may or may not have committed).
 *    The envelope is a transport detail of this boundary: domain errors thrown inside a Durable
 *    Object lose their class and fields over RPC.
 */
import type { SessionObjectNamespaceLike } from '../adapters/durable-object/durable-object-store.js';
import type { SessionObjectJournalRpc } from '../adapters/durable-object/journal-rpc.js';
import { unwrapRpcResult, type RpcResult, type SessionObjectRpc } from '../adapters/durable-object/rpc.js';
import type { DurableError } from '../protocol/errors.js';
import type { SessionId } from '../protocol/ids.js';

/** The session object as the app uses it: every RPC method plus `fetch` (WebSocket upgrades). */
export type SessionObjectHandle = SessionObjectRpc &
  SessionObjectJournalRpc & { fetch(request: Request): Promise<Response> };

/** The session's Durable Object stub. */
export function sessionObject(namespace: SessionObjectNamespaceLike, sessionId: SessionId): SessionObjectHandle {
  // SAFETY: `get` accepts what `idFromName` of the same namespace returns; the namespace binds a
  // SessionObject (or a subclass), whose stubs forward every public method (the RPC layer only
  // adds Disposable wrappers around the same results).
  return namespace.get(namespace.idFromName(sessionId) as never) as SessionObjectHandle;
}

/**
 * Runs one RPC call and unwraps its result. `onTransportFailure` builds the error reported when
 * the call itself throws (the outcome is then unknown to the Worker).
 */
export async function callObject<T>(
  call: () => Promise<RpcResult<T>>,
  onTransportFailure: (cause: unknown) => DurableError,
): Promise<T> {
  let result: RpcResult<T>;
  try {
    result = await call();
  } catch (cause) {
    throw onTransportFailure(cause);
  }
  return unwrapRpcResult<T>(result);
}
