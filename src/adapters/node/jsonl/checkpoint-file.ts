/**
 * The projection checkpoint of one session, in `{name}.checkpoint` (derived data, see
 * `docs/checkpoints.md`).
 *
 * Format (version 2): the 8 bytes `ALCKPT2\n`, then one or more segments. A segment is
 * `u32 data length, u32 meta length, the data, the meta (JSON: sequence, event ID, the record's
 * total length), the two lengths again, u32 CRC-32 of the segment's lengths and meta` (little-
 * endian; the repeated lengths let a writer find the last segment from the file's end). The data
 * is not in the CRC: core's frames carry their own chained checksums, and hashing megabytes twice
 * on every open cost more than the open itself (a segment whose data was damaged reads as a
 * record core refuses, and the journal folds the log). The record is the concatenation of the segments' data up to the last intact
 * segment, at the position that segment's meta names; anything after it (a torn write) is ignored.
 * Version-1 files (a JSON line with the position, then the bytes) are still read.
 *
 * Writing a whole record: one segment goes to a private temp file (mode 0600) that is fsynced
 * first, outside the session lock (it may be megabytes); then, under the session lock, it is
 * renamed over the previous checkpoint and the directory is fsynced. A crash at any point leaves
 * the previous checkpoint or the new one (an orphaned `.tmp` file at worst, which nothing reads).
 *
 * Extending (a record whose first `extendsBytes` bytes are the stored record's, see `contract.ts`):
 * under the session lock, when the file ends with an intact segment whose record is exactly that
 * long and ends with the same 8 bytes, one segment with only the new bytes is appended and the
 * file is flushed (`fdatasync`). A crash mid-append leaves the old segments intact and a torn one
 * after them, which reads as the previous checkpoint (and the next write is a whole one). Reading
 * needs no lock. Anything malformed reads as "no checkpoint"; core checks the bytes again before
 * trusting them.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import path from 'node:path';
import type { DurableCheckpointRecord } from '../../../core/checkpoint/contract.js';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import { EventId, EventSequence } from '../../../protocol/ids.js';
import { syncDirectory } from './directory-sync.js';

/** Version tag of the legacy (version-1) checkpoint file format, still read. */
const CHECKPOINT_FILE_VERSION = 1;
/** The first bytes of a version-2 checkpoint file. */
const MAGIC = Buffer.from('ALCKPT2\n');

/** Reads a checkpoint file; `null` when absent or malformed. */
export async function readCheckpointFile(file: string): Promise<DurableCheckpointRecord | null> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new DurableEventStoreError('DURABLE_EVENT_READ_FAILED', `cannot read ${file}`, { cause: error });
  }
  if (bytes.length >= MAGIC.length && bytes.subarray(0, MAGIC.length).equals(MAGIC)) return readSegments(bytes);
  const newline = bytes.indexOf(0x0a);
  if (newline === -1) return null;
  try {
    const header = JSON.parse(bytes.subarray(0, newline).toString('utf8')) as { version?: unknown; sequence?: unknown; eventId?: unknown };
    if (header.version !== CHECKPOINT_FILE_VERSION) return null;
    return {
      sequence: EventSequence(header.sequence as number),
      eventId: EventId(header.eventId as string),
      data: new Uint8Array(bytes.buffer, bytes.byteOffset + newline + 1, bytes.length - newline - 1),
    };
  } catch {
    return null;
  }
}

/** What a segment's meta records. */
interface SegmentMeta {
  sequence: number;
  eventId: string;
  /** The record's total length after this segment. */
  length: number;
}

/** One segment holding `data` (the bytes after `start` of a record of `record.data.length`). */
function segment(record: DurableCheckpointRecord, start: number): Buffer[] {
  const data = record.data.subarray(start);
  const meta = Buffer.from(JSON.stringify({ sequence: record.sequence, eventId: record.eventId, length: record.data.length } satisfies SegmentMeta));
  const head = Buffer.alloc(8);
  head.writeUInt32LE(data.length, 0);
  head.writeUInt32LE(meta.length, 4);
  const tail = Buffer.alloc(12);
  tail.writeUInt32LE(data.length, 0);
  tail.writeUInt32LE(meta.length, 4);
  tail.writeUInt32LE(crc32(tail.subarray(0, 8), crc32(meta, crc32(head))), 8);
  return [head, Buffer.from(data.buffer, data.byteOffset, data.length), meta, tail];
}

function parseMeta(bytes: Buffer): SegmentMeta | null {
  try {
    const meta = JSON.parse(bytes.toString('utf8')) as Partial<SegmentMeta> | null;
    if (typeof meta !== 'object' || meta === null || typeof meta.eventId !== 'string') return null;
    if (!Number.isSafeInteger(meta.sequence) || !Number.isSafeInteger(meta.length)) return null;
    return meta as SegmentMeta;
  } catch {
    return null;
  }
}

/**
 * The record of a version-2 file: its segments' data up to the last intact one. The data parts are
 * moved together in place, inside the buffer just read (each part moves left over the framing
 * before it, already checked), so a record of several segments costs no second buffer: a fresh
 * copy of a multi-megabyte record cost more in first-touch page faults than reading it.
 */
function readSegments(bytes: Buffer): DurableCheckpointRecord | null {
  let total = 0;
  let last: SegmentMeta | null = null;
  let offset = MAGIC.length;
  const dataStart = MAGIC.length + 8;
  while (offset + 8 <= bytes.length) {
    const dataLength = bytes.readUInt32LE(offset);
    const metaLength = bytes.readUInt32LE(offset + 4);
    const end = offset + 8 + dataLength + metaLength + 12;
    if (end > bytes.length || bytes.readUInt32LE(end - 12) !== dataLength || bytes.readUInt32LE(end - 8) !== metaLength) break;
    const metaStart = offset + 8 + dataLength;
    if (crc32(bytes.subarray(end - 12, end - 4), crc32(bytes.subarray(metaStart, end - 12), crc32(bytes.subarray(offset, offset + 8)))) !== bytes.readUInt32LE(end - 4)) break;
    const meta = parseMeta(bytes.subarray(offset + 8 + dataLength, end - 12));
    if (meta === null || meta.length !== total + dataLength) break;
    // The target range ends at or before this segment's meta: nothing still to be read moves.
    if (offset + 8 !== dataStart + total) bytes.copyWithin(dataStart + total, offset + 8, offset + 8 + dataLength);
    total += dataLength;
    last = meta;
    offset = end;
  }
  if (last === null) return null;
  try {
    return { sequence: EventSequence(last.sequence), eventId: EventId(last.eventId), data: new Uint8Array(bytes.buffer, bytes.byteOffset + dataStart, total) };
  } catch {
    return null;
  }
}

/**
 * Appends the bytes of `record` after its first `record.extendsBytes` to the checkpoint file as one
 * segment (call under the session lock). Returns `false`, writing nothing, unless the file ends
 * with an intact segment whose record is exactly that prefix (same length, same last 8 bytes): the
 * caller then writes the record whole.
 */
export async function extendCheckpointFile(file: string, record: DurableCheckpointRecord): Promise<boolean> {
  const prefix = record.extendsBytes;
  if (prefix === undefined) return false;
  let handle;
  try {
    handle = await open(file, 'r+');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', `cannot open ${file}`, { cause: error });
  }
  try {
    const size = (await handle.stat()).size;
    const head = Buffer.alloc(MAGIC.length);
    const trailer = Buffer.alloc(12);
    if (size < MAGIC.length + 20) return false;
    await handle.read(head, 0, head.length, 0);
    await handle.read(trailer, 0, 12, size - 12);
    const start = size - 20 - trailer.readUInt32LE(0) - trailer.readUInt32LE(4);
    if (!head.equals(MAGIC) || start < MAGIC.length) return false;
    // The last segment whole (it is small: the frames of one extension), to check its CRC, its
    // record's length and the prefix's last 8 bytes.
    const last = Buffer.alloc(size - start);
    await handle.read(last, 0, last.length, start);
    const dataLength = last.readUInt32LE(0);
    const metaLength = last.readUInt32LE(4);
    if (dataLength !== trailer.readUInt32LE(0) || metaLength !== trailer.readUInt32LE(4)) return false;
    const metaStart = 8 + dataLength;
    const crc = crc32(last.subarray(last.length - 12, last.length - 4), crc32(last.subarray(metaStart, last.length - 12), crc32(last.subarray(0, 8))));
    if (crc !== trailer.readUInt32LE(8)) return false;
    const meta = parseMeta(last.subarray(8 + dataLength, 8 + dataLength + metaLength));
    if (meta === null || meta.length !== prefix) return false;
    const lastData = last.subarray(8, 8 + dataLength);
    const tail = record.data.subarray(prefix - 8, prefix);
    if (lastData.length < 8 || !lastData.subarray(lastData.length - 8).equals(tail)) return false;
    let position = size;
    for (const part of segment(record, prefix)) {
      let written = 0;
      while (written < part.length) written += (await handle.write(part, written, part.length - written, position + written)).bytesWritten;
      position += part.length;
    }
    await handle.datasync();
    return true;
  } catch (error) {
    throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', `cannot extend ${file}`, { cause: error });
  } finally {
    await handle.close();
  }
}

/** Writes and fsyncs a temp file next to `file`; returns its path. */
export async function prepareCheckpointFile(file: string, record: DurableCheckpointRecord): Promise<string> {
  const directory = path.dirname(file);
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writev([MAGIC, ...segment(record, 0)]);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return temp;
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', `cannot write ${temp}`, { cause: error });
  }
}

/** Renames a prepared temp file over the checkpoint and fsyncs the directory (call under the session lock). */
export async function commitCheckpointFile(temp: string, file: string): Promise<void> {
  try {
    await rename(temp, file);
    await syncDirectory(path.dirname(file));
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', `cannot replace ${file}`, { cause: error });
  }
}

/** Removes a prepared temp file that will not be committed. */
export async function discardCheckpointFile(temp: string): Promise<void> {
  await unlink(temp).catch(() => undefined);
}
