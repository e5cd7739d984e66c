/**
 * A read-only store over a fixed array of envelopes, valid or not, plus checkpoint storage: the
 * property tests need logs no real store would accept (a real store validates every draft). It
 * is a test double of the log, not of a backend; the backends are proven by the conformance run.
 * With `liveCheckpoints` it keeps journals' checkpoints live as the memory store does (and encodes
 * one on demand for `readCheckpoint`).
 */
import type { DurableCheckpointRecord, DurableCheckpointStore } from '../../src/core/checkpoint/contract.js';
import { encodeLiveCheckpoint, type DurableLiveCheckpoint, type DurableLiveCheckpointStore } from '../../src/core/checkpoint/live.js';
import type { DurableAppendResult, DurableEventStore, DurableReadOptions, DurableReadResult } from '../../src/core/store.js';
import { DurableEventStoreError } from '../../src/protocol/errors.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { EventSequence } from '../../src/protocol/ids.js';

export class ArrayLogStore implements DurableEventStore, DurableCheckpointStore, DurableLiveCheckpointStore {
  events: DurableEventEnvelope[] = [];
  checkpoint: DurableCheckpointRecord | null = null;
  live: DurableLiveCheckpoint | null = null;
  reads = 0;

  constructor(readonly liveCheckpoints = false) {}

  async append(): Promise<DurableAppendResult> {
    throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', 'read-only test log');
  }

  async read(_sessionId: string, options?: DurableReadOptions): Promise<DurableReadResult> {
    this.reads += 1;
    const after = options?.after ?? 0;
    const limit = options?.limit ?? 100;
    const head = this.events.length === 0 ? null : EventSequence(this.events.length);
    if (after > this.events.length) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_CURSOR', 'after is ahead of the head');
    const page = this.events.slice(after, after + limit).map((event) => structuredClone(event));
    const last = page[page.length - 1];
    return {
      events: page,
      nextCursor: last === undefined ? (after === 0 ? null : EventSequence(after)) : EventSequence(after + page.length),
      headSequence: head,
      hasMore: after + page.length < this.events.length,
    };
  }

  async getHeadSequence(): Promise<EventSequence | null> {
    return this.events.length === 0 ? null : EventSequence(this.events.length);
  }

  async readCheckpoint(): Promise<DurableCheckpointRecord | null> {
    if (this.live !== null) return encodeLiveCheckpoint(this.live);
    return this.checkpoint === null ? null : { ...this.checkpoint, data: this.checkpoint.data.slice() };
  }

  async writeCheckpoint(_sessionId: string, record: DurableCheckpointRecord): Promise<void> {
    this.checkpoint = { ...record, data: record.data.slice() };
    this.live = null;
  }

  async writeLiveCheckpoint(_sessionId: string, checkpoint: DurableLiveCheckpoint): Promise<void> {
    this.live = checkpoint;
    this.checkpoint = null;
  }

  async readLiveCheckpoint(): Promise<DurableLiveCheckpoint | null> {
    return this.live;
  }
}
