/**
 * The validated-state sidecar of a session log, `{name}.jsonl.validated` (derived data).
 *
 * A store object that validated a long log records what it validated, so that the next process
 * opening the log validates only the bytes appended since, instead of the whole file:
 * `{"version":1,"sessionId":..,"dev":..,"ino":..,"validSize":n,"head":h,"lastLineOffset":o,
 * "lastLineFirst":f,"lastEventId":..,"firstBytesSha256":..,"lastLineSha256":..,"index":[[seq,offset],..]}`.
 * `index` is a sparse batch index: the first sequence and byte offset of a line at least every
 * {@link SPARSE_INDEX_BYTES} bytes (page reads in that prefix read from the nearest entry on).
 *
 * Written atomically (temp file, rename; not flushed: see {@link writeValidatedState}) while the
 * session lock is held, off the append path: when a checkpoint is written, after a catch-up validated at least {@link SAVE_AFTER_BYTES},
 * and when appends grew the log by that much since the last save. It is trusted only after a
 * cheap check against the log ({@link decodeValidatedState} + `SessionLog.restore`): same session,
 * same device and inode, the file at least `validSize` long, the first bytes and the whole last
 * validated line hash as recorded, and that line parses to a batch of this session ending at
 * `head` with `lastEventId`. Anything else (missing, malformed, another session's, ahead of the
 * log, another file) means a full validation: the sidecar can only skip work, never make an
 * invalid log look valid. The lines before `validSize` are not parsed again, so an in-place edit
 * of a middle line made outside the store is not seen on open (the edit is still caught by page
 * reads' structural checks, as for a long-lived store object's cache).
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeSync, constants } from 'node:fs';

/** Version tag of the sidecar format. */
const VALIDATED_STATE_VERSION = 1;
/** A sparse index entry is kept at least every this many bytes of log. */
export const SPARSE_INDEX_BYTES = 64 * 1024;
/** Validated growth (bytes) after which the sidecar is written again. */
export const SAVE_AFTER_BYTES = 8 * 1024 * 1024;
/** How many leading bytes of the log are hashed as part of its identity. */
export const FIRST_BYTES_HASHED = 4096;
/** A last line longer than this is not re-read to verify a sidecar: the log is validated in full. */
export const MAX_VERIFIED_LINE_BYTES = 16 * 1024 * 1024;

/** What the sidecar records. */
interface ValidatedState {
  sessionId: string;
  dev: string;
  ino: string;
  validSize: number;
  head: number;
  lastLineOffset: number;
  lastLineFirst: number;
  lastEventId: string;
  firstBytesSha256: string;
  lastLineSha256: string;
  index: Array<[number, number]>;
}

/** SHA-256 of `bytes`, base64url. */
export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('base64url');
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * Reads and structurally checks the sidecar at `file`; `undefined` when absent, unreadable,
 * malformed or not of `sessionId`.
 */
export function decodeValidatedState(file: string, sessionId: string): ValidatedState | undefined {
  let value: Partial<ValidatedState> & { version?: unknown };
  try {
    value = JSON.parse(readFileSync(file, 'utf8')) as typeof value;
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || value.version !== VALIDATED_STATE_VERSION) return undefined;
  if (value.sessionId !== sessionId) return undefined;
  const { validSize, head, lastLineOffset, lastLineFirst, index } = value;
  if (!isCount(validSize) || !isCount(head) || !isCount(lastLineOffset) || !isCount(lastLineFirst)) return undefined;
  if (validSize === 0 || head === 0 || lastLineOffset >= validSize || lastLineFirst < 1 || lastLineFirst > head) return undefined;
  for (const key of ['dev', 'ino', 'lastEventId', 'firstBytesSha256', 'lastLineSha256'] as const) {
    if (typeof value[key] !== 'string') return undefined;
  }
  if (!Array.isArray(index) || index.length === 0) return undefined;
  let previousSequence = 0;
  let previousOffset = -1;
  for (const entry of index as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 2) return undefined;
    const [sequence, offset] = entry as unknown[];
    if (!isCount(sequence) || !isCount(offset)) return undefined;
    if (sequence <= previousSequence || offset <= previousOffset || sequence > lastLineFirst || offset > lastLineOffset) {
      return undefined;
    }
    if (previousOffset === -1 && (sequence !== 1 || offset !== 0)) return undefined;
    previousSequence = sequence;
    previousOffset = offset;
  }
  return value as ValidatedState;
}

/**
 * Replaces the sidecar atomically (temp file, rename). Errors are swallowed: the sidecar is an
 * optimization, and a missing or old one only costs a longer validation. It is not fsynced: after
 * a power loss the file may be the old one, empty or torn, and each of those is either checked
 * against the log (an old one still describes a prefix of the durable log) or refused, which
 * means a full validation. A flush would cost a blocking `fsync` on the main thread per checkpoint
 * write, a measurable share of JSONL commit throughput (docs/performance-history.md).
 */
export function writeValidatedState(file: string, state: ValidatedState): void {
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const body = Buffer.from(`${JSON.stringify({ version: VALIDATED_STATE_VERSION, ...state })}\n`);
    const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      let written = 0;
      while (written < body.length) written += writeSync(fd, body, written, body.length - written, written);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
  } catch {
    try {
      unlinkSync(temp);
    } catch {
      // Nothing to clean up.
    }
  }
}
