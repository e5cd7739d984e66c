/**
 * Projection checkpoints in SQL (derived data, see `docs/checkpoints.md`).
 *
 * Table `checkpoints (session_id, chunk, sequence, event_id, data)`: the latest checkpoint of a
 * session, split into chunks of {@link CHECKPOINT_CHUNK_BYTES} (a Durable Object's SQLite refuses
 * values over 2 MB). `write` deletes the old chunks and inserts the new ones in one transaction, so
 * a reader (and a crash) sees the old checkpoint or the new one, never a mix. `read` checks the
 * chunks are complete and consistent; anything else reads as "no checkpoint".
 */
import { checkCheckpointRecord, type DurableCheckpointRecord } from '../../core/checkpoint/contract.js';
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

/** The checkpoint table of one SQL database. */
export class SqlCheckpoints {
  constructor(private readonly driver: SqlDriver) {}

  /** The latest checkpoint of `sessionId`, or `null`. */
  read(sessionId: SessionId): DurableCheckpointRecord | null {
    const id = checkSessionId(sessionId);
    const rows = this.driver.query<ChunkRow>(
      'SELECT chunk, chunks, sequence, event_id, data FROM checkpoints WHERE session_id = ? ORDER BY chunk',
      id,
    );
    const first = rows[0];
    if (first === undefined || rows.length !== first.chunks) return null;
    let total = 0;
    const parts: Uint8Array[] = [];
    for (const [index, row] of rows.entries()) {
      if (row.chunk !== index || row.sequence !== first.sequence || row.event_id !== first.event_id) return null;
      const part = row.data instanceof Uint8Array ? row.data : new Uint8Array(row.data);
      parts.push(part);
      total += part.length;
    }
    const data = new Uint8Array(total);
    let offset = 0;
    for (const part of parts) {
      data.set(part, offset);
      offset += part.length;
    }
    try {
      return { sequence: EventSequence(first.sequence), eventId: EventId(first.event_id), data };
    } catch {
      return null;
    }
  }

  /** Replaces the checkpoint of `sessionId` in one transaction. */
  write(sessionId: SessionId, record: DurableCheckpointRecord): void {
    const id = checkSessionId(sessionId);
    // The driver copies the bytes into the database inside this synchronous call: no private copy.
    const checked = checkCheckpointRecord(record, false);
    const chunks = Math.max(1, Math.ceil(checked.data.length / CHECKPOINT_CHUNK_BYTES));
    this.driver.transaction(() => {
      this.driver.exec('DELETE FROM checkpoints WHERE session_id = ?', id);
      for (let chunk = 0; chunk < chunks; chunk++) {
        const part = checked.data.subarray(chunk * CHECKPOINT_CHUNK_BYTES, (chunk + 1) * CHECKPOINT_CHUNK_BYTES);
        this.driver.exec(
          'INSERT INTO checkpoints (session_id, chunk, chunks, sequence, event_id, data) VALUES (?, ?, ?, ?, ?, ?)',
          id,
          chunk,
          chunks,
          checked.sequence,
          checked.eventId,
          part,
        );
      }
    });
  }
}
