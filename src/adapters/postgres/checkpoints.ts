/**
 * Projection checkpoints on PostgreSQL: a head row (sequence, event ID, chunk count, bytes) and
 * the record's bytes in chunks. A read joins the head with its chunks; a write replaces every
 * chunk in one transaction, or appends one chunk when the record extends the stored one.
 */
import { throwIfAborted } from '../../core/abort.js';
import { checkCheckpointRecord, joinCheckpointChunks, storedTailMatches, type DurableCheckpointRecord } from '../../core/checkpoint/contract.js';
import { checkSessionId } from '../../core/log-engine.js';
import type { DurableStoreCallOptions } from '../../core/store.js';
import { EventSequence, type EventId, type SessionId } from '../../protocol/ids.js';
import type { PostgresConnection } from './connection.js';
import { integer, writeFailure } from './failures.js';
import type { PostgresStatements } from './statements.js';

/** A row of `readCheckpoint`: the head, joined with one of its chunks (or none). */
interface CheckpointRow {
  sequence: string;
  event_id: string;
  data: Uint8Array;
  chunks: number | null;
  bytes: string | null;
  chunk: number | null;
  chunk_data: Uint8Array | null;
}

/** The checkpoints of one store. */
export class PostgresCheckpoints {
  constructor(
    private readonly connection: PostgresConnection,
    private readonly sql: PostgresStatements,
  ) {}

  async readCheckpoint(sessionId: SessionId, options?: DurableStoreCallOptions): Promise<DurableCheckpointRecord | null> {
    const id = checkSessionId(sessionId);
    throwIfAborted(options?.signal);
    const rows = await this.connection.read<CheckpointRow>('checkpoint read', this.sql.readCheckpoint, [id], options?.signal);
    const head = rows[0];
    if (head === undefined) return null;
    const sequence = EventSequence(integer(head.sequence, 'checkpoint sequence'));
    // SAFETY: written by `writeCheckpoint` after `checkCheckpointRecord`; core re-checks every record.
    const eventId = head.event_id as EventId;
    // A record written before migration 4 is whole in `data`. A plain Uint8Array (pg hands back a
    // Buffer), with its own copy of the bytes.
    if (head.chunks === null) return { sequence, eventId, data: new Uint8Array(head.data) };
    const bytes = integer(head.bytes ?? '', 'checkpoint bytes');
    const data = joinCheckpointChunks(
      rows.map((row) => ({ index: row.chunk, data: row.chunk_data })),
      head.chunks,
      bytes,
    );
    return data === null ? null : { sequence, eventId, data };
  }

  async writeCheckpoint(sessionId: SessionId, record: DurableCheckpointRecord, options?: DurableStoreCallOptions): Promise<void> {
    const id = checkSessionId(sessionId);
    // The bytes are sent before this call settles and not kept: no private copy.
    const checked = checkCheckpointRecord(record, false);
    throwIfAborted(options?.signal);
    const data = Buffer.from(checked.data.buffer, checked.data.byteOffset, checked.data.byteLength);
    const prefix = checked.extendsBytes;
    try {
      await this.connection.transaction(options?.signal, async (client) => {
        if (prefix !== undefined) {
          const head = (await client.query<{ chunks: number | null; bytes: string | null }>(this.sql.lockCheckpointHead, [id])).rows[0];
          if (head !== undefined && head.chunks !== null && head.bytes === String(prefix)) {
            const tail = (await client.query<{ tail: Uint8Array }>(this.sql.checkpointChunkTail, [id, head.chunks - 1])).rows[0]?.tail;
            if (storedTailMatches(tail, checked)) {
              // Chunks past the head are not part of any record (none, unless a write was cut off
              // by something other than a rollback): clear the index this chunk takes.
              await client.query(this.sql.deleteCheckpointChunksFrom, [id, head.chunks]);
              await client.query(this.sql.insertCheckpointChunk, [id, head.chunks, data.subarray(prefix)]);
              await client.query(this.sql.writeCheckpointHead, [id, checked.sequence, checked.eventId, head.chunks + 1, data.length]);
              return;
            }
          }
        }
        // The head first: its row lock orders this write after any other writer of the session's
        // checkpoint (an extension locks it too), so the delete sees every chunk already committed.
        await client.query(this.sql.writeCheckpointHead, [id, checked.sequence, checked.eventId, 1, data.length]);
        await client.query(this.sql.deleteCheckpointChunks, [id]);
        await client.query(this.sql.insertCheckpointChunk, [id, 0, data]);
      });
    } catch (error) {
      throw writeFailure(error, 'checkpoint write', options?.signal);
    }
  }
}
