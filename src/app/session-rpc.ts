/**
 * The Worker's side of the session object's RPC.
 *
 * 1. {@link sessionObject} finds the one `SessionObject` of a session (`idFromName(sessionId)` on
 *    the `SESSIONS` binding).
 * 2. {@link callObject} runs one RPC: a `{ ok: true, value }` result yields the value, a
 *    `{ ok: false, error }` result is rebuilt into the same domain error class (so the route's
 *    problem+json keeps the code), and an exception thrown by the RPC transport itself (object
 *    reset, overload, network) becomes the domain error the caller chose for an uncertain outcome
 *    (for an append that is `DURABLE_EVENT_WRITE_FAILED`: it may or may not have committed).
 */
import { unwrapRpcResult, type RpcResult, type SessionObjectRpc } from '../adapters/durable-object/rpc.js';
import type { DurableError } from '../protocol/errors.js';
import type { SessionId } from '../protocol/ids.js';
import type { Env } from './env.js';

/** The session object as the Worker uses it: its RPC methods plus `fetch` (WebSocket upgrades). */
export type SessionObjectHandle = SessionObjectRpc & { fetch(request: Request): Promise<Response> };

/** The session's Durable Object stub. */
export function sessionObject(env: Env, sessionId: SessionId): SessionObjectHandle {
  const namespace = env.SESSIONS;
  const stub = namespace.get(namespace.idFromName(sessionId));
  // SAFETY: the stub forwards every public method of SessionObject, which implements
  // SessionObjectRpc; the RPC layer only adds Disposable wrappers around the same results.
  return stub as unknown as SessionObjectHandle;
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
