/**
 * The app's handle on a session's object: {@link sessionObject} finds the one `SessionObject` of
 * a session (`idFromName(sessionId)` on the namespace the app was configured with). Routes run
 * the object's operations through `callOperation` (`adapters/durable-object/operation-client.ts`),
 * which unwraps the answer and reports a lost one by the operation's kind.
 */
import type { SessionObjectNamespaceLike } from '../adapters/durable-object/durable-object-store.js';
import type { SessionObjectJournalRpc } from '../adapters/durable-object/journal-rpc.js';
import type { SessionObjectRpc } from '../adapters/durable-object/rpc.js';
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
