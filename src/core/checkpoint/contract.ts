/**
 * The optional store capability for projection checkpoints (see `docs/checkpoints.md`).
 *
 * A checkpoint is derived data: core encodes it (`codec.ts`), the store keeps the latest one per
 * session next to the log, in the same durability domain, and hands it back byte for byte. A store
 * without these methods still works; the journal and projector then fold the whole log.
 */
import { DurableEventStoreError } from '../../protocol/errors.js';
import { describeInvalidId, type EventId, type EventSequence, type SessionId } from '../../protocol/ids.js';
import type { DurableStoreCallOptions } from '../store.js';

/** One stored projection checkpoint: where it stands, and the opaque bytes core encoded. */
export interface DurableCheckpointRecord {
  /** Sequence of the last event the checkpoint covers. */
  sequence: EventSequence;
  /** Event ID at `sequence` when the checkpoint was written. */
  eventId: EventId;
  /**
   * Encoded by core; stores keep these bytes unchanged (at most {@link MAX_CHECKPOINT_BYTES}).
   * On `writeCheckpoint` the array is lent for the call only (until its promise settles; callers
   * leave it unchanged until then): a store keeps a copy, never the caller's array (the journal
   * reuses its encoding buffers once a write has settled).
   */
  data: Uint8Array;
  /**
   * Set by a writer when the first `extendsBytes` bytes of `data` are exactly a record it read from
   * or wrote to this store (the new record appends frames to it). A store that declares
   * {@link DurableCheckpointStore.checkpointExtension} may then keep its stored bytes and write only
   * the rest, after checking that its stored record is at least that long and ends that prefix with
   * the same 8 bytes (a checksum chained over every byte before it); otherwise, and for every other
   * store, the record is written whole. Reads never carry it.
   */
  extendsBytes?: number;
}

/** Largest checkpoint a store must accept (about 8 bytes per ID a session ever used, plus state). */
export const MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024;

/**
 * Checkpoint storage. Rules:
 * - `writeCheckpoint` replaces the session's checkpoint atomically: a reader sees the previous
 *   record or the new one, never a mix, also after a crash mid-write;
 * - `readCheckpoint` returns the latest record written (or `null`), with identical bytes;
 * - neither changes the event log, and neither needs the execution fence (checkpoints are derived
 *   data any reader may rebuild); core checks every record before trusting it.
 */
export interface DurableCheckpointStore {
  /**
   * True when `writeCheckpoint` honours {@link DurableCheckpointRecord.extendsBytes} (writes only
   * the new frames of an extended record, keeping the crash rule above: a crash mid-write leaves
   * the previous record readable). Journals extend records only for such stores; every other store
   * gets compacted records of one frame.
   */
  readonly checkpointExtension?: boolean;
  readCheckpoint(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableCheckpointRecord | null>;
  writeCheckpoint(sessionId: SessionId, record: DurableCheckpointRecord, options?: DurableStoreCallOptions): Promise<void>;
}

/** True when `store` declares {@link DurableCheckpointStore.checkpointExtension} (it keeps extended records). */
export function keepsCheckpointExtensions(store: unknown): boolean {
  return typeof store === 'object' && store !== null && (store as Partial<DurableCheckpointStore>).checkpointExtension === true;
}

/** True when `store` implements {@link DurableCheckpointStore}. */
export function isCheckpointStore(store: unknown): store is DurableCheckpointStore {
  return (
    typeof store === 'object' &&
    store !== null &&
    typeof (store as Partial<DurableCheckpointStore>).readCheckpoint === 'function' &&
    typeof (store as Partial<DurableCheckpointStore>).writeCheckpoint === 'function'
  );
}

/**
 * A buffer of at least `bytes` for checkpoint bytes: `previous` when it is large enough, else a new
 * one with room to grow. A fresh megabyte costs more in first-touch page faults than copying into
 * one already touched (figures in docs/performance-history.md), so checkpoint writers (the
 * journal's encoder, the memory store) reuse theirs. A new buffer doubles the size up to
 * {@link CHECKPOINT_BUFFER_DOUBLING_LIMIT}: a growing session then pays for fresh pages once per
 * doubling (about twice its final size in total, instead of five times with a quarter to grow).
 * Larger ones keep a quarter: a writer holds up to three such buffers (the journal's two, the
 * memory store's one), and a Durable Object has 128 MB.
 * `previous` must be a buffer nobody else still reads.
 */
export function reuseCheckpointBuffer(previous: ArrayBufferLike | null | undefined, bytes: number): ArrayBuffer {
  if (previous instanceof ArrayBuffer && previous.byteLength >= bytes) return previous;
  return new ArrayBuffer(Math.ceil(bytes * (bytes < CHECKPOINT_BUFFER_DOUBLING_LIMIT ? 2 : 1.25)));
}

/** Size up to which a new checkpoint buffer gets twice the room it needs (about 250,000 events). */
const CHECKPOINT_BUFFER_DOUBLING_LIMIT = 4 * 1024 * 1024;

/**
 * The checks every store runs on `writeCheckpoint` input (bad input is
 * `DURABLE_EVENT_INVALID_INPUT`, an oversized record `DURABLE_EVENT_LIMIT_EXCEEDED`). Returns the
 * record with a private copy of the bytes, or with the caller's bytes when `copy` is false (only
 * for a store that has consumed them before its call settles and keeps no reference: a synchronous
 * SQL insert, or PostgreSQL's, which sends them before its promise resolves).
 */
export function checkCheckpointRecord(record: unknown, copy = true): DurableCheckpointRecord {
  const r = record as Partial<DurableCheckpointRecord> | null;
  if (typeof r !== 'object' || r === null) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'a checkpoint record must be an object');
  }
  const { sequence, eventId } = checkPosition(r);
  if (!(r.data instanceof Uint8Array)) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'checkpoint data must be a Uint8Array');
  }
  checkSize(r.data.length);
  const extendsBytes = r.extendsBytes;
  if (
    extendsBytes !== undefined &&
    (typeof extendsBytes !== 'number' || !Number.isSafeInteger(extendsBytes) || extendsBytes < 8 || extendsBytes % 8 !== 0 || extendsBytes >= r.data.length)
  ) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_INVALID_INPUT',
      'checkpoint extendsBytes must be a multiple of 8, at least 8 and less than the data length',
    );
  }
  const checked = { sequence, eventId, data: copy ? r.data.slice() : r.data };
  return extendsBytes === undefined ? checked : { ...checked, extendsBytes };
}

/**
 * What a remote writer sends instead of a whole record that extends the stored one (the Durable
 * Object RPC client and the HTTP client): the record's position, the length of the prefix it
 * builds on (its `extendsBytes`), and its bytes from `extendsBytes - 8` to its end, so the first 8
 * bytes are the ones the stored record must end with and the rest are the new frames. A record of
 * 7 MB that extends by 100 KB then crosses the wire as 100 KB, and tails are not bounded by one
 * RPC value the way whole records are.
 */
export interface DurableCheckpointExtension {
  readonly sequence: EventSequence;
  readonly eventId: EventId;
  /** Bytes of the stored record this one extends (a multiple of 8, at least 8). */
  readonly extendsBytes: number;
  /** The record's bytes from `extendsBytes - 8` on (more than 8 bytes). */
  readonly tail: Uint8Array;
}

/** The extension a writer sends for `record` (checked), or `null` when it extends nothing. */
export function checkpointExtensionOf(record: DurableCheckpointRecord): DurableCheckpointExtension | null {
  const prefix = record.extendsBytes;
  if (prefix === undefined) return null;
  return { sequence: record.sequence, eventId: record.eventId, extendsBytes: prefix, tail: record.data.subarray(prefix - 8) };
}

/**
 * The checks a store runs on an extension it receives (bad input is `DURABLE_EVENT_INVALID_INPUT`,
 * a record that would grow past {@link MAX_CHECKPOINT_BYTES} `DURABLE_EVENT_LIMIT_EXCEEDED`), the
 * same as {@link checkCheckpointRecord} runs on the whole record. Returns it with the caller's
 * bytes (stores consume them before their call settles).
 */
export function checkCheckpointExtension(extension: unknown): DurableCheckpointExtension {
  const e = extension as Partial<DurableCheckpointExtension> | null;
  if (typeof e !== 'object' || e === null) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'a checkpoint extension must be an object');
  }
  const prefix = e.extendsBytes;
  if (typeof prefix !== 'number' || !Number.isSafeInteger(prefix) || prefix < 8 || prefix % 8 !== 0) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'checkpoint extendsBytes must be a multiple of 8 and at least 8');
  }
  if (!(e.tail instanceof Uint8Array) || e.tail.length <= 8) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'a checkpoint extension tail must be bytes, more than 8 of them');
  }
  const { sequence, eventId } = checkPosition(e);
  checkSize(prefix - 8 + e.tail.length);
  return { sequence, eventId, extendsBytes: prefix, tail: e.tail };
}

/** The position checks of {@link checkCheckpointRecord} and {@link checkCheckpointExtension}. */
function checkPosition(r: { sequence?: unknown; eventId?: unknown }): { sequence: EventSequence; eventId: EventId } {
  if (typeof r.sequence !== 'number' || !Number.isSafeInteger(r.sequence) || r.sequence < 1) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'checkpoint sequence must be an integer >= 1');
  }
  const eventIdProblem = typeof r.eventId === 'string' ? describeInvalidId(r.eventId) : 'must be a string';
  if (eventIdProblem !== undefined) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `checkpoint eventId ${eventIdProblem}`);
  }
  // SAFETY: checked above.
  return { sequence: r.sequence as EventSequence, eventId: r.eventId as EventId };
}

/** The size limit of a whole record (`length` bytes). */
function checkSize(length: number): void {
  if (length > MAX_CHECKPOINT_BYTES) {
    throw new DurableEventStoreError('DURABLE_EVENT_LIMIT_EXCEEDED', `checkpoint data exceeds ${MAX_CHECKPOINT_BYTES} bytes`);
  }
}

/**
 * True when a stored record `stored` holds the prefix an extending record `record` builds on: at
 * least `record.extendsBytes` bytes, ending that prefix with the same 8 bytes (see
 * {@link DurableCheckpointRecord.extendsBytes}). For stores that honour extensions.
 */
export function extendsStoredRecord(stored: Uint8Array, record: DurableCheckpointRecord): boolean {
  const prefix = record.extendsBytes;
  if (prefix === undefined || stored.length < prefix) return false;
  return storedTailMatches(stored.subarray(prefix - 8, prefix), record);
}

/**
 * True when `tail`, the last 8 bytes of a stored record of exactly `record.extendsBytes` bytes,
 * are the 8 bytes `record` has there: the check of {@link extendsStoredRecord} for a store that
 * reads only the tail of its stored record (its length checked by the caller).
 */
export function storedTailMatches(tail: Uint8Array | null | undefined, record: DurableCheckpointRecord): boolean {
  const prefix = record.extendsBytes;
  if (prefix === undefined || tail === null || tail === undefined || tail.length !== 8) return false;
  for (let index = 0; index < 8; index++) if (tail[index] !== record.data[prefix - 8 + index]) return false;
  return true;
}

/** One stored chunk of a checkpoint record: its position and bytes (`null` when a row has none). */
export interface CheckpointChunk {
  readonly index: number | null;
  readonly data: Uint8Array | null;
}

/**
 * For stores that keep a record in numbered chunks: the bytes of chunks `0 .. count - 1` joined in
 * one array, or `null` unless `chunks` are exactly those, in order, each with bytes, and (when
 * `bytes` is given) totalling `bytes`. A `null` record reads as "no checkpoint" (core rebuilds).
 */
export function joinCheckpointChunks(chunks: readonly CheckpointChunk[], count: number, bytes?: number): Uint8Array | null {
  if (chunks.length !== count) return null;
  let total = 0;
  for (const [index, chunk] of chunks.entries()) {
    if (chunk.index !== index || chunk.data === null) return null;
    total += chunk.data.length;
  }
  if (bytes !== undefined && total !== bytes) return null;
  const data = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    // SAFETY: every chunk's data was checked above.
    const part = chunk.data as Uint8Array;
    data.set(part, offset);
    offset += part.length;
  }
  return data;
}

/**
 * One slice of a stored checkpoint record, for transports that cap a message (a Worker-to-object
 * RPC value is at most 32 MiB, and a record may reach {@link MAX_CHECKPOINT_BYTES}): the record's
 * position and total size, and `data`, its bytes from `offset` on.
 */
export interface DurableCheckpointSlice {
  readonly sequence: EventSequence;
  readonly eventId: EventId;
  /** Size of the whole record. */
  readonly totalBytes: number;
  /** Where `data` starts in the record. */
  readonly offset: number;
  readonly data: Uint8Array;
}

/** Bytes of the record a slice carries by default (well inside a 32 MiB RPC value). */
export const CHECKPOINT_SLICE_BYTES = 16 * 1024 * 1024;

/**
 * The slice of `record` at `offset` (at most `length` bytes, a copy), or why the request is bad.
 * An offset at or past the end of the record gives an empty slice that still tells the record's
 * size: a reader whose record was replaced by a shorter one sees the change and starts over.
 */
export function sliceCheckpointRecord(record: DurableCheckpointRecord, offset: number, length: number): DurableCheckpointSlice {
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'checkpoint slice offset must be a non-negative integer');
  }
  if (!Number.isSafeInteger(length) || length < 1) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'checkpoint slice length must be a positive integer');
  }
  return {
    sequence: record.sequence,
    eventId: record.eventId,
    totalBytes: record.data.length,
    offset,
    data: record.data.slice(offset, Math.min(record.data.length, offset + length)),
  };
}

/** Attempts {@link readCheckpointSlices} makes when the record is replaced while it reads. */
const SLICED_READ_ATTEMPTS = 3;

/**
 * Reads a whole record through `readSlice` (the record's slice at an offset, or `null` for no
 * checkpoint): the first slice gives the record's size, the others follow in order. A record
 * replaced between two slices (another sequence, event ID or size) restarts the read, up to three
 * times; after that the read fails with `DURABLE_EVENT_UNAVAILABLE`. A replacement of the same
 * size at the same event that lands between two slices yields a mix of both, which fails the
 * record's checksum when decoded: core then discards it and folds the log, as for any corrupt one.
 */
export async function readCheckpointSlices(
  readSlice: (offset: number) => Promise<DurableCheckpointSlice | null>,
): Promise<DurableCheckpointRecord | null> {
  for (let attempt = 0; attempt < SLICED_READ_ATTEMPTS; attempt++) {
    const first = await readSlice(0);
    if (first === null) return null;
    if (first.offset !== 0 || first.data.length > first.totalBytes || !Number.isSafeInteger(first.totalBytes)) {
      throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the store answered a malformed checkpoint slice');
    }
    if (first.data.length === first.totalBytes) return { sequence: first.sequence, eventId: first.eventId, data: first.data };
    if (first.totalBytes > MAX_CHECKPOINT_BYTES || first.data.length === 0) {
      throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the store answered a malformed checkpoint slice');
    }
    const data = new Uint8Array(first.totalBytes);
    data.set(first.data, 0);
    let offset = first.data.length;
    let replaced = false;
    while (offset < first.totalBytes) {
      const next = await readSlice(offset);
      if (next === null || next.sequence !== first.sequence || next.eventId !== first.eventId || next.totalBytes !== first.totalBytes) {
        replaced = true;
        break;
      }
      if (next.offset !== offset || next.data.length === 0 || offset + next.data.length > first.totalBytes) {
        throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the store answered a malformed checkpoint slice');
      }
      data.set(next.data, offset);
      offset += next.data.length;
    }
    if (!replaced) return { sequence: first.sequence, eventId: first.eventId, data };
  }
  throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', `the checkpoint was replaced while it was read, ${SLICED_READ_ATTEMPTS} times`);
}

/** One slice of a whole record written in several calls (RPC or HTTP); see {@link writeWholeCheckpoint}. */
export interface CheckpointWriteSlice {
  /** Chosen by the client for one record (1 to 128 characters). */
  readonly uploadId: string;
  readonly sequence: number;
  readonly eventId: string;
  /** Size of the whole record (at most `MAX_CHECKPOINT_BYTES`). */
  readonly totalBytes: number;
  /** Where `data` starts in the record. */
  readonly offset: number;
  /** At most `CHECKPOINT_SLICE_BYTES`, at least one byte. */
  readonly data: Uint8Array;
}

/**
 * The slices of a whole record for a sliced write (see {@link writeWholeCheckpoint}), at most
 * `sliceBytes` each, made one at a time as they are taken (so a sender holds one slice besides the
 * record): copies, since a view would carry its whole buffer across RPC (structured clone copies
 * the buffer).
 */
export function* checkpointWriteSlices(record: DurableCheckpointRecord, uploadId: string, sliceBytes = CHECKPOINT_SLICE_BYTES): Generator<CheckpointWriteSlice> {
  const total = record.data.length;
  for (let offset = 0; offset < total; offset += sliceBytes) {
    yield {
      uploadId,
      sequence: record.sequence,
      eventId: record.eventId,
      totalBytes: total,
      offset,
      data: record.data.slice(offset, Math.min(total, offset + sliceBytes)),
    };
  }
}

/**
 * The write-side counterpart of {@link readCheckpointSlices}: sends a whole record with `whole`
 * when it is at most {@link CHECKPOINT_SLICE_BYTES}, else slice by slice with `slice`, which
 * resolves `true` once the receiver wrote the record (after the last slice), or `null` for the
 * first slice when the receiver takes no slices (then the record goes whole). Shared by the RPC
 * client, the Worker's HTTP route and the HTTP client.
 */
export async function writeWholeCheckpoint(
  record: DurableCheckpointRecord,
  whole: (record: DurableCheckpointRecord) => Promise<unknown>,
  slice: (slice: CheckpointWriteSlice) => Promise<boolean | null>,
): Promise<void> {
  if (record.data.length <= CHECKPOINT_SLICE_BYTES) {
    await whole(record);
    return;
  }
  for (const part of checkpointWriteSlices(record, crypto.randomUUID())) {
    const written = await slice(part);
    if (written === null && part.offset === 0) {
      await whole(record);
      return;
    }
    if (written !== (part.offset + part.data.length === part.totalBytes)) {
      throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'the session object lost the checkpoint upload; the next write starts again');
    }
  }
}
