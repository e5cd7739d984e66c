/**
 * External delivery: records a delivery for `(session, runId, key)` and wakes local waiters.
 *
 * A delivery is idempotent by its `deliveryId` within the session: the same ID with the same run,
 * key and payload changes nothing; with anything else it is `DURABILITY_CONFLICT`. A new record
 * wakes every waiter that uses the same store object in this process directly (other processes
 * learn of it through the store's `watchDurability` or the host's `subscribe`).
 */
import type { DurableStoreCallOptions } from '../call-options.js';
import type { DurabilityRecordStore } from './record-contract.js';
import { checkDurabilitySessionId } from './record-engine.js';
import type { DeliveryInput, DeliveryReceipt } from './port-types.js';
import { wakeLocalWaiters } from './store-local.js';

/**
 * Records a delivery through `store` and wakes its local waiters.
 *
 * @example
 * await deliverDurably(store, sessionId, { runId: 'run-1', key: 'approval', deliveryId: 'd-1', payload: { ok: true } });
 */
export async function deliverDurably(
  store: DurabilityRecordStore,
  sessionId: string,
  input: DeliveryInput & { runId: string },
  options?: DurableStoreCallOptions,
): Promise<DeliveryReceipt> {
  const id = checkDurabilitySessionId(sessionId);
  const { record, created } = await store.recordDurability(
    id,
    { kind: 'delivery', runId: input.runId, key: input.key, deliveryId: input.deliveryId, payload: input.payload },
    options,
  );
  if (created) wakeLocalWaiters(store, id);
  return { deliveryId: input.deliveryId, sequence: record.sequence, created };
}
