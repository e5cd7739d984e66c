/**
 * The session object's projection checkpoints: the rows with `host: 'checkpoint'` of
 * `SESSION_OPERATIONS` ({@link CheckpointHost}), and when the object writes checkpoints on its
 * own ({@link ObjectCheckpoints}).
 *
 * Journal commits inside the object already fold every event, and their journal's policy writes
 * checkpoints. Plain RPC/HTTP appends fold nothing, so the object counts appended events and,
 * once appends pause for {@link IDLE_CHECKPOINT_MS} with at least
 * {@link IDLE_CHECKPOINT_MIN_EVENTS} new events, catches its unfenced journal up and writes a
 * checkpoint at the head. Nothing runs during a burst of appends, so the object's append
 * throughput is untouched; objects are evicted only after being idle, so the idle checkpoint
 * comes before the eviction and the next cold start folds (almost) nothing after it.
 */
import type { SqlDurableEventStore } from '../adapters/sql/sql-store.js';
import {
  CHECKPOINT_SLICE_BYTES,
  sliceCheckpointRecord,
  type DurableCheckpointExtension,
  type DurableCheckpointRecord,
} from '../core/checkpoint/contract.js';
import type { SessionId } from '../protocol/ids.js';
import type { OperationHosts, OperationInput, OperationOutput } from '../core/operations/operations.js';
import type { CheckpointUploads } from './checkpoint-uploads.js';

/** What the host needs of the object's store. */
export type CheckpointHostStore = Pick<SqlDurableEventStore, 'readCheckpoint' | 'writeCheckpoint' | 'extendCheckpoint'>;

function fieldOf(input: unknown, key: string): unknown {
  return typeof input === 'object' && input !== null ? (input as Record<string, unknown>)[key] : undefined;
}

/**
 * Serves the checkpoint rows. Input over RPC is an untrusted shape: the store checks a record and
 * an extension, the uploads check a slice (`checkpoint-uploads.ts`), each with its own error codes.
 */
export class CheckpointHost implements Readonly<OperationHosts['checkpoint']> {
  constructor(
    private readonly store: () => CheckpointHostStore,
    private readonly uploads: CheckpointUploads,
  ) {}

  async readCheckpoint(sessionId: SessionId, input: OperationInput<'readCheckpoint'>): Promise<OperationOutput<'readCheckpoint'>> {
    const record = await this.store().readCheckpoint(sessionId);
    if (record === null) return null;
    // SAFETY: sliceCheckpointRecord checks offset and length at run time.
    const offset = (fieldOf(input, 'offset') ?? 0) as number;
    const length = (fieldOf(input, 'length') ?? CHECKPOINT_SLICE_BYTES) as number;
    return sliceCheckpointRecord(record, offset, Math.min(length, CHECKPOINT_SLICE_BYTES));
  }

  async writeCheckpoint(sessionId: SessionId, input: OperationInput<'writeCheckpoint'>): Promise<null> {
    // SAFETY: the store checks the record at run time.
    await this.store().writeCheckpoint(sessionId, input as DurableCheckpointRecord);
    return null;
  }

  extendCheckpoint(sessionId: SessionId, input: OperationInput<'extendCheckpoint'>): Promise<boolean> {
    // SAFETY: the store checks the extension at run time.
    return this.store().extendCheckpoint(sessionId, input as DurableCheckpointExtension);
  }

  async writeCheckpointSlice(sessionId: SessionId, input: OperationInput<'writeCheckpointSlice'>): Promise<boolean> {
    const record = this.uploads.add(input);
    if (record === null) return false;
    await this.store().writeCheckpoint(sessionId, record);
    return true;
  }
}

/** Quiet time after the last append before an idle checkpoint is written. */
const IDLE_CHECKPOINT_MS = 1000;
/** Fewest new events that justify an idle checkpoint. */
const IDLE_CHECKPOINT_MIN_EVENTS = 256;

/** Counts appended events and triggers checkpoint maintenance when appends pause. */
export class ObjectCheckpoints {
  #pending = 0;
  #running = false;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly maintain: (sessionId: SessionId, force: boolean) => Promise<void>) {}

  /** Called after every commit of `count` events. */
  afterCommit(sessionId: SessionId, count: number): void {
    this.#pending += count;
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#pending >= IDLE_CHECKPOINT_MIN_EVENTS) this.#run(sessionId);
    }, IDLE_CHECKPOINT_MS);
  }

  #run(sessionId: SessionId): void {
    if (this.#running) return;
    this.#running = true;
    this.#pending = 0;
    void this.maintain(sessionId, true).finally(() => {
      this.#running = false;
    });
  }
}
