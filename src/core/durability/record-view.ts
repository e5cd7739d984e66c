/**
 * DurabilityRecordView: a port's incremental, validated picture of one session's durability records.
 *
 * 1. `applyPage` takes the pages a port reads with its cursor. Each record must be the next
 *    sequence (`cursor + 1`) of the right session and parse strictly; anything else fails closed
 *    with `DURABILITY_CORRUPT_RECORD`. The cursor only moves over that contiguous prefix, so the
 *    port never reads a record twice and never skips one.
 * 2. `remember` adds a record the port itself just wrote (or got back as the first writer's),
 *    possibly ahead of the cursor. Identity lookups (`find`) use it at once; wait decisions do not,
 *    because they depend on record order, which is only known for the contiguous prefix (a record
 *    at exactly `cursor + 1` extends that prefix, and the cursor moves over it).
 * 3. `decideWait` answers a wait from the prefix: the first delivery to `(runId, key)` wins
 *    unless the wait's `wait_timeout` record comes before it — the same answer on every replay.
 */
import { DurabilityError } from '../../protocol/errors.js';
import type { SessionId } from '../../protocol/ids.js';
import type { DurabilityReadResult, DurabilityRecord, DurabilityRecordKind } from './record-contract.js';
import { deliveryAddress, durabilityIdentity, parseDurabilityRecord } from './record-engine.js';

/** How a wait ended, as the record order decides it. */
export type WaitDecision =
  | { status: 'delivered'; record: DurabilityRecord<'delivery'> }
  | { status: 'timed_out'; record: DurabilityRecord<'wait_timeout'> };

function corrupt(message: string, details?: Record<string, unknown>): DurabilityError {
  return new DurabilityError('DURABILITY_CORRUPT_RECORD', message, details === undefined ? undefined : { details });
}

/** The port's cache of one session's durability records (see the module header). */
export class DurabilityRecordView {
  readonly #sessionId: SessionId;
  #cursor: number | null = null;
  readonly #byIdentity = new Map<string, DurabilityRecord>();
  /** First delivery per `(runId, key)` within the contiguous prefix. */
  readonly #firstDelivery = new Map<string, DurabilityRecord<'delivery'>>();

  constructor(sessionId: SessionId) {
    this.#sessionId = sessionId;
  }

  /** Last sequence of the contiguous prefix read so far (`null`: nothing read yet). */
  get cursor(): number | null {
    return this.#cursor;
  }

  /**
   * Applies one page read with `after === this.cursor ?? undefined`. Returns true when the
   * backend says more records follow. Throws `DURABILITY_CORRUPT_RECORD` on any inconsistency.
   */
  applyPage(page: DurabilityReadResult): boolean {
    if (typeof page !== 'object' || page === null || !Array.isArray(page.records)) {
      throw corrupt('readDurability returned a malformed page');
    }
    for (const raw of page.records) {
      const expected = (this.#cursor ?? 0) + 1;
      this.#apply(parseDurabilityRecord(raw, { sessionId: this.#sessionId, sequence: expected }));
    }
    if (page.nextCursor !== this.#cursor) {
      throw corrupt(`readDurability reported nextCursor ${String(page.nextCursor)} after reaching ${String(this.#cursor)}`);
    }
    if (typeof page.hasMore !== 'boolean') throw corrupt('readDurability returned a page without hasMore');
    if (page.hasMore && page.records.length === 0) {
      throw corrupt('readDurability reported more records but returned none');
    }
    return page.hasMore;
  }

  #apply(record: DurabilityRecord): void {
    this.#index(record);
    this.#cursor = record.sequence;
    if (record.kind === 'delivery') {
      const address = deliveryAddress(record.runId, record.key);
      if (!this.#firstDelivery.has(address)) this.#firstDelivery.set(address, record);
    }
  }

  #index(record: DurabilityRecord): void {
    const identity = durabilityIdentity(record);
    const known = this.#byIdentity.get(identity);
    if (known !== undefined && known.sequence !== record.sequence) {
      throw corrupt(
        `two durability records share the identity ${identity} (sequences ${known.sequence} and ${record.sequence})`,
        { sequence: record.sequence },
      );
    }
    this.#byIdentity.set(identity, record);
  }

  /**
   * Adds a record this port wrote or received from `recordDurability` (any position). One that is
   * exactly the next sequence extends the contiguous prefix (sequences are dense, so nothing lies
   * between): the port's next read starts after it instead of reading its own write back.
   */
  remember(record: DurabilityRecord): void {
    const parsed = parseDurabilityRecord(record, { sessionId: this.#sessionId });
    if (parsed.sequence === (this.#cursor ?? 0) + 1) this.#apply(parsed);
    else this.#index(parsed);
  }

  /** The record of `(kind, scope, key)`, if known. */
  find<K extends Exclude<DurabilityRecordKind, 'delivery'>>(
    kind: K,
    scope: string,
    key: string,
  ): DurabilityRecord<K> | undefined {
    // SAFETY: records are indexed under their own kind, so the kind matches.
    return this.#byIdentity.get(JSON.stringify([kind, scope, key])) as DurabilityRecord<K> | undefined;
  }

  /** How the wait `(scope, key)` on mailbox `(runId, key)` ended, judged on the contiguous prefix. */
  decideWait(scope: string, runId: string, key: string): WaitDecision | undefined {
    const delivery = this.#firstDelivery.get(deliveryAddress(runId, key));
    const timeout = this.find('wait_timeout', scope, key);
    const cursor = this.#cursor ?? 0;
    const timedOut = timeout !== undefined && timeout.sequence <= cursor ? timeout : undefined;
    if (delivery !== undefined && (timedOut === undefined || delivery.sequence < timedOut.sequence)) {
      return { status: 'delivered', record: delivery };
    }
    return timedOut === undefined ? undefined : { status: 'timed_out', record: timedOut };
  }
}
