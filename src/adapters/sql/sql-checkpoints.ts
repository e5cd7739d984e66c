/**
 * Projection checkpoints in SQL (derived data, see `docs/checkpoints.md`).
 *
 * Table `checkpoints (session_id, chunk, chunks, sequence, event_id, data)` holds the bytes of each
 * session's latest checkpoint in chunks of at most {@link CHECKPOINT_CHUNK_BYTES} (a Durable
 * Object's SQLite refuses values over 2 MB); table `checkpoint_heads (session_id, sequence,
 * event_id, chunks, bytes)` says where the record ends. A record is chunks `0 .. chunks - 1`,
 * concatenated, and must be `bytes` long; anything else reads as "no checkpoint".
 *
 * `write` replaces the record in one transaction (delete the rows, insert the chunks, set the
 * head), so a reader (and a crash) sees the old checkpoint or the new one, never a mix. A record
 * that extends the stored one (`extendsBytes` equal to the stored length, and the same 8 bytes
 * before it: `DurableCheckpointRecord.extendsBytes`) appends only its new bytes as new chunk rows
 * and moves the head, also in one transaction: the journal appends one frame per checkpoint, so a
 * write costs the IDs used since the previous one instead of the whole filter (1.8 MB at 100,000
 * events). The journal compacts the record now and then, and that write is whole again.
 *
 * A session without a head row has a record written before the head table existed (each row then
 * carries the record's position and chunk count); it is read that way.
 */
import {
  checkCheckpointExtension,
  checkCheckpointRecord,
  checkpointExtensionOf,
  joinCheckpointChunks,
  type CheckpointChunk,
  type DurableCheckpointExtension,
  type DurableCheckpointRecord,
} from '../../core/checkpoint/contract.js';
import { checkSessionId } from '../../core/log-engine.js';
import { EventId, EventSequence, type SessionId } from '../../protocol/ids.js';
import type { SqlDriver } from './driver.js';

/** Bytes per stored chunk. */
export const CHECKPOINT_CHUNK_BYTES = 1024 * 1024;

interface ChunkRow {
  chunk: number;
  chunks: number;
  sequence: number;
  event_id: string;
  data: Uint8Array | ArrayBuffer;
}

interface HeadRow {
  sequence: number;
  event_id: string;
  chunks: number;
  bytes: number;
}

const bytesOf = (data: Uint8Array | ArrayBuffer): Uint8Array => (data instanceof Uint8Array ? data : new Uint8Array(data));

/** Where a record stands (what its rows and head carry besides bytes). */
type Position = Pick<DurableCheckpointRecord, 'sequence' | 'eventId'>;

/** True when `stored` holds exactly the bytes of `expected`. */
function sameBytes(stored: Uint8Array | null, expected: Uint8Array): boolean {
  if (stored === null || stored.length !== expected.length) return false;
  for (let index = 0; index < expected.length; index++) if (stored[index] !== expected[index]) return false;
  return true;
}

/** The checkpoint tables of one SQL database. */
export class SqlCheckpoints {
  constructor(private readonly driver: SqlDriver) {}

  /**
   * The latest checkpoint of `sessionId`, or `null`. One statement reads the head and its chunks,
   * so it sees one state of both tables even while another connection writes.
   */
  read(sessionId: SessionId): DurableCheckpointRecord | null {
    const id = checkSessionId(sessionId);
    const rows = this.driver.query<HeadRow & { chunk: number | null; data: Uint8Array | ArrayBuffer | null }>(
      `SELECT h.sequence, h.event_id, h.chunks, h.bytes, c.chunk, c.data
       FROM checkpoint_heads h LEFT JOIN checkpoints c ON c.session_id = h.session_id AND c.chunk < h.chunks
       WHERE h.session_id = ? ORDER BY c.chunk`,
      id,
    );
    const head = rows[0];
    if (head === undefined) {
      return legacyRecord(
        this.driver.query<ChunkRow>('SELECT chunk, chunks, sequence, event_id, data FROM checkpoints WHERE session_id = ? ORDER BY chunk', id),
      );
    }
    const data = joinCheckpointChunks(rows.map(chunkOf), head.chunks, head.bytes);
    return data === null ? null : recordOf(head.sequence, head.event_id, data);
  }

  /** Replaces the checkpoint of `sessionId` in one transaction (an extension appends; see above). */
  write(sessionId: SessionId, record: DurableCheckpointRecord): void {
    const id = checkSessionId(sessionId);
    const checked = checkCheckpointRecord(record, false);
    this.driver.transaction(() => {
      const extension = checkpointExtensionOf(checked);
      if (extension !== null && this.#extend(id, extension)) return;
      this.driver.exec('DELETE FROM checkpoints WHERE session_id = ?', id);
      const chunks = this.#insertChunks(id, checked, checked.data, 0);
      this.#setHead(id, checked, chunks, checked.data.length);
    });
  }

  /**
   * Appends an extension's new bytes (one transaction) when the stored record is exactly the
   * prefix it builds on; otherwise changes nothing and returns false (the writer then sends the
   * record whole). What the Durable Object answers a remote writer's extension with.
   */
  extend(sessionId: SessionId, extension: DurableCheckpointExtension): boolean {
    const id = checkSessionId(sessionId);
    const checked = checkCheckpointExtension(extension);
    return this.driver.transaction(() => this.#extend(id, checked));
  }

  /** Appends the bytes after the extension's prefix when the stored record is exactly that prefix; else false. */
  #extend(id: string, extension: DurableCheckpointExtension): boolean {
    const prefix = extension.extendsBytes;
    const head = this.#head(id);
    if (head === undefined || head.bytes !== prefix) return false;
    const last = this.driver.query<{ tail: Uint8Array | ArrayBuffer | null }>(
      'SELECT substr(data, -8, 8) AS tail FROM checkpoints WHERE session_id = ? AND chunk = ?',
      id,
      head.chunks - 1,
    )[0];
    const stored = last?.tail;
    if (!sameBytes(stored ? bytesOf(stored) : null, extension.tail.subarray(0, 8))) return false;
    // Rows past the head (a longer record replaced by a shorter one is deleted whole, so there are
    // none unless something else wrote them) must not be read as part of this record later.
    this.driver.exec('DELETE FROM checkpoints WHERE session_id = ? AND chunk >= ?', id, head.chunks);
    const chunks = this.#insertChunks(id, extension, extension.tail.subarray(8), head.chunks);
    this.#setHead(id, extension, chunks, prefix + extension.tail.length - 8);
    return true;
  }

  /** Inserts `bytes` as chunk rows from `firstChunk` on; returns the chunk count after. */
  #insertChunks(id: string, position: Position, bytes: Uint8Array, firstChunk: number): number {
    const count = Math.max(firstChunk === 0 ? 1 : 0, Math.ceil(bytes.length / CHECKPOINT_CHUNK_BYTES));
    for (let index = 0; index < count; index++) {
      const start = index * CHECKPOINT_CHUNK_BYTES;
      const part = bytes.subarray(start, Math.min(bytes.length, start + CHECKPOINT_CHUNK_BYTES));
      this.driver.exec(
        'INSERT INTO checkpoints (session_id, chunk, chunks, sequence, event_id, data) VALUES (?, ?, ?, ?, ?, ?)',
        id,
        firstChunk + index,
        firstChunk + count,
        position.sequence,
        position.eventId,
        part,
      );
    }
    return firstChunk + count;
  }

  #setHead(id: string, position: Position, chunks: number, bytes: number): void {
    this.driver.exec(
      `INSERT INTO checkpoint_heads (session_id, sequence, event_id, chunks, bytes) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (session_id) DO UPDATE SET sequence = excluded.sequence, event_id = excluded.event_id,
         chunks = excluded.chunks, bytes = excluded.bytes`,
      id,
      position.sequence,
      position.eventId,
      chunks,
      bytes,
    );
  }

  #head(id: string): HeadRow | undefined {
    return this.driver.query<HeadRow>('SELECT sequence, event_id, chunks, bytes FROM checkpoint_heads WHERE session_id = ?', id)[0];
  }
}

/** A record written before `checkpoint_heads` existed: every row carries the position and count. */
function legacyRecord(rows: ChunkRow[]): DurableCheckpointRecord | null {
  const first = rows[0];
  if (first === undefined) return null;
  if (rows.some((row) => row.sequence !== first.sequence || row.event_id !== first.event_id)) return null;
  const data = joinCheckpointChunks(rows.map(chunkOf), first.chunks);
  return data === null ? null : recordOf(first.sequence, first.event_id, data);
}

/** A chunk row as {@link joinCheckpointChunks} takes it. */
function chunkOf(row: { chunk: number | null; data: Uint8Array | ArrayBuffer | null }): CheckpointChunk {
  return { index: row.chunk, data: row.data === null ? null : bytesOf(row.data) };
}

function recordOf(sequence: number, eventId: string, data: Uint8Array): DurableCheckpointRecord | null {
  try {
    return { sequence: EventSequence(sequence), eventId: EventId(eventId), data };
  } catch {
    return null;
  }
}
