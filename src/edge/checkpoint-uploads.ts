/**
 * Whole checkpoint records a client writes in slices. One Worker-to-object RPC value is at most
 * 32 MiB and a record may be larger (some 5 million events), so the RPC client sends a whole
 * record over {@link CHECKPOINT_SLICE_BYTES} as slices of at most that size; the object gathers
 * them in memory, in order, and writes the record once its last slice arrived (a reader never sees
 * part of one: the store's write is one transaction). One upload per session object at a time:
 * a slice at offset 0 starts an upload (and drops any other), any other slice must continue the
 * current upload exactly (same upload ID, position and size, at the byte where the last one
 * ended) or is refused as invalid input, and the client starts over. An upload nobody continued
 * for {@link CHECKPOINT_UPLOAD_IDLE_MS} is dropped at the next slice; memory held meanwhile is the
 * record's size, as when the object encodes a checkpoint of its own.
 */
import {
  checkCheckpointRecord,
  CHECKPOINT_SLICE_BYTES,
  MAX_CHECKPOINT_BYTES,
  type CheckpointWriteSlice,
  type DurableCheckpointRecord,
} from '../core/checkpoint/contract.js';
import { DurableEventStoreError } from '../protocol/errors.js';

/** An unfinished upload not continued for this long is dropped. */
export const CHECKPOINT_UPLOAD_IDLE_MS = 60_000;

interface Upload {
  readonly id: string;
  readonly sequence: number;
  readonly eventId: string;
  readonly bytes: Uint8Array;
  received: number;
  touchedAt: number;
}

const invalid = (message: string): DurableEventStoreError => new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', message);
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** The upload in progress of one session object. */
export class CheckpointUploads {
  #upload: Upload | null = null;

  constructor(private readonly now: () => number) {}

  /** Adds a slice: the whole record once its last slice is in, else `null`. */
  add(slice: unknown): DurableCheckpointRecord | null {
    const s = slice as Partial<CheckpointWriteSlice> | null;
    if (typeof s !== 'object' || s === null) throw invalid('a checkpoint slice must be an object');
    const { uploadId, totalBytes, offset, data } = s;
    if (typeof uploadId !== 'string' || uploadId.length < 1 || uploadId.length > 128) throw invalid('checkpoint uploadId must be 1 to 128 characters');
    if (!isCount(totalBytes) || totalBytes < 1) throw invalid('checkpoint totalBytes must be an integer >= 1');
    if (totalBytes > MAX_CHECKPOINT_BYTES) {
      throw new DurableEventStoreError('DURABLE_EVENT_LIMIT_EXCEEDED', `checkpoint data exceeds ${MAX_CHECKPOINT_BYTES} bytes`);
    }
    if (!(data instanceof Uint8Array) || data.length < 1 || data.length > CHECKPOINT_SLICE_BYTES) {
      throw invalid(`a checkpoint slice must be 1 to ${CHECKPOINT_SLICE_BYTES} bytes`);
    }
    if (!isCount(offset) || offset + data.length > totalBytes) throw invalid('checkpoint slice offset must be an integer within the record');
    const now = this.now();
    if (this.#upload !== null && now - this.#upload.touchedAt > CHECKPOINT_UPLOAD_IDLE_MS) this.#upload = null;
    let upload = this.#upload;
    if (offset === 0) {
      // The position is checked once, on the first slice (an empty record stands in for the bytes).
      checkCheckpointRecord({ sequence: s.sequence, eventId: s.eventId, data: new Uint8Array(0) }, false);
      upload = { id: uploadId, sequence: s.sequence as number, eventId: s.eventId as string, bytes: new Uint8Array(totalBytes), received: 0, touchedAt: now };
      this.#upload = upload;
    } else if (
      upload === null ||
      upload.id !== uploadId ||
      upload.received !== offset ||
      upload.bytes.length !== totalBytes ||
      upload.sequence !== s.sequence ||
      upload.eventId !== s.eventId
    ) {
      throw invalid('this checkpoint slice does not continue the upload in progress; start again from offset 0');
    }
    upload.bytes.set(data, offset);
    upload.received += data.length;
    upload.touchedAt = now;
    if (upload.received < totalBytes) return null;
    this.#upload = null;
    return checkCheckpointRecord({ sequence: upload.sequence, eventId: upload.eventId, data: upload.bytes }, false);
  }

  /** True while an upload is unfinished (for tests). */
  get pending(): boolean {
    return this.#upload !== null;
  }
}
