/**
 * Options every store call accepts. In a file of their own so the event-store contract (`store.ts`)
 * and the durability contract (`durability/record-contract.ts`) share them without importing each other.
 */
export interface DurableStoreCallOptions {
  /**
   * Stops waiting; once aborted, no mutation starts. The call rejects with exactly the signal's reason
   * (an `AbortError` when aborted without one; else whatever it is, e.g. the `TimeoutError` of `AbortSignal.timeout`).
   * A store removes the abort listeners it adds to this signal when the call settles: callers such
   * as the journal lend the same signal to their next call (never to two calls at once).
   */
  signal?: AbortSignal | undefined;
}
