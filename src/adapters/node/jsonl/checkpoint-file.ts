/**
 * The projection checkpoint of one session, in `{name}.checkpoint` (derived data, see
 * `docs/checkpoints.md`).
 *
 * Format: one JSON line `{"version":1,"sequence":n,"eventId":"..."}`, then the opaque bytes core
 * encoded. Writing: the bytes go to a private temp file (mode 0600) that is fsynced first,
 * outside the session lock (it may be megabytes); then, under the session lock, it is renamed
 * over the previous checkpoint and the directory is fsynced. A crash at any point leaves the
 * previous checkpoint or the new one, never a torn file (an orphaned `.tmp` file at worst, which
 * nothing reads). Reading needs no lock: a rename is atomic. Anything malformed reads as "no
 * checkpoint"; core checks the bytes themselves again before trusting them.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { DurableCheckpointRecord } from '../../../core/checkpoint/contract.js';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import { EventId, EventSequence } from '../../../protocol/ids.js';
import { syncDirectory } from './directory-sync.js';

/** Version tag of the checkpoint file format. */
export const CHECKPOINT_FILE_VERSION = 1;

/** Reads a checkpoint file; `null` when absent or malformed. */
export async function readCheckpointFile(file: string): Promise<DurableCheckpointRecord | null> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new DurableEventStoreError('DURABLE_EVENT_READ_FAILED', `cannot read ${file}`, { cause: error });
  }
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

/** Writes and fsyncs a temp file next to `file`; returns its path. */
export async function prepareCheckpointFile(file: string, record: DurableCheckpointRecord): Promise<string> {
  const directory = path.dirname(file);
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const header = Buffer.from(
      `${JSON.stringify({ version: CHECKPOINT_FILE_VERSION, sequence: record.sequence, eventId: record.eventId })}\n`,
    );
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writev([header, record.data]);
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
