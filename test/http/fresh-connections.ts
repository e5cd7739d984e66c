/**
 * Setup file of the `http` project: every `fetch` of a test process asks for its own connection
 * (`Connection: close`), unless the request names a `Connection` itself.
 *
 * workerd closes a kept-alive connection after about 5 s idle; Node's fetch keeps one for 4 s and
 * only learns of the close when its event loop runs. On a saturated machine, or after a test built
 * a large body synchronously, the loop runs late, and the next request is written to a connection
 * the runtime has already closed: "other side closed" or EPIPE, for whichever request drew it. A
 * connection per request has no idle period to race; on loopback it costs a fraction of a
 * millisecond.
 */
const PATCHED = Symbol.for('agent-ledger.test.fresh-connections');
type PatchedFetch = typeof fetch & { [PATCHED]?: true };

// Files share one process and run this setup file each: patch once.
if ((globalThis.fetch as PatchedFetch)[PATCHED] !== true) {
  const originalFetch = globalThis.fetch;
  const patched: PatchedFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has('connection')) headers.set('connection', 'close');
    return originalFetch(input, { ...init, headers });
  };
  patched[PATCHED] = true;
  globalThis.fetch = patched;
}
