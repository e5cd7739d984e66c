/**
 * The bytes of a projection checkpoint (format 6): one or more frames.
 *
 * Frame layout (little-endian, every frame starts at a multiple of 8): `"ALC6"` magic, u32 header
 * length, u32 run length (hashes), u32 zero; the header as UTF-8 JSON; zero padding to a multiple
 * of 8; the frame's run of key hashes (float64, sorted); a float64 checksum. The checksum
 * (`hashFrameBytes`) hashes the frame's bytes before it, starting from the previous frame's
 * checksum, so it chains over every byte before it.
 *
 * A record is one frame (a compacted checkpoint, the only kind most stores get) or a compacted
 * frame followed by extension frames (stores that declare `checkpointExtension`, see
 * `contract.ts`): a writer appends a frame holding the state at its new position and one run with
 * the IDs used since (merged with the smaller runs before it); the latest frame's header lists the
 * live runs by byte offset. The checkpoint a record stands for is its last intact frame: a torn or
 * damaged frame and everything after it are ignored, so a crash while a frame is being appended
 * leaves the previous checkpoint readable. A record whose first frame fails a check decodes to a
 * reason string, never to a partial checkpoint. Records of earlier formats (`"ALCP"`: format 2;
 * `"ALC3"`: format 3, the same layout with a slower single-stream checksum; `"ALC4"`: format 4,
 * whose digest fed the identity text one code unit per round; `"ALC5"`: format 5, whose digest
 * chained only each event's identity, not its payload) read as an unknown format: the journal then
 * folds the log and writes a format-6 record.
 */
import type { DurableEventEnvelope } from '../../protocol/events.js';
import { canonicalJson, type JsonValue } from '../../protocol/json.js';
import type { CommandId, EventId, EventSequence, SessionId } from '../../protocol/ids.js';
import type { CommandIndexCheckpoint, CommandRange } from '../command-index.js';
import type { FoldState, RecentEvent } from '../projector/fold-state.js';
import { detach, seal } from '../projector/frozen-data.js';
import type { DurableCheckpointRecord } from './contract.js';
import { hashFrameBytes, hashString, INITIAL_HASH_STATE, type RunningHashState } from '../hash.js';
import { HashedKeyFilter, mergeRunsInto, runBytes, runView, type KeyRun } from '../projector/key-filter.js';

/** Version of this byte layout. */
export const CHECKPOINT_FORMAT = 6;
const MAGIC = [0x41, 0x4c, 0x43, 0x36];
/** Magics of earlier formats ("ALCP": format 2, "ALC3": 3, "ALC4": 4, "ALC5": 5), read as an unknown format (rebuilt). */
const LEGACY_MAGICS = [
  [0x41, 0x4c, 0x43, 0x50],
  [0x41, 0x4c, 0x43, 0x33],
  [0x41, 0x4c, 0x43, 0x34],
  [0x41, 0x4c, 0x43, 0x35],
];
/** Magic, header length, run length, reserved. */
const FIXED_BYTES = 16;

/** One run of key hashes inside a record: byte offset of its first hash, and its length. */
interface CheckpointRun {
  readonly offset: number;
  readonly count: number;
}

/** Where a decoded or encoded record ends, for a writer that extends it. */
export interface CheckpointExtent {
  /** Bytes up to the end of the record's last intact frame. */
  readonly length: number;
  /** The checksum of that frame (the chain a next frame continues). */
  readonly checksum: number;
  /** The live runs of that frame. */
  readonly runs: readonly CheckpointRun[];
  /** Sum of the live runs' bytes plus that frame's own bytes (what a compaction keeps). */
  readonly liveBytes: number;
}

/** Everything a checkpoint restores, decoded. */
export interface DecodedCheckpoint {
  readonly sessionId: SessionId;
  readonly sequence: EventSequence;
  readonly eventId: EventId;
  readonly projectorVersion: number;
  /** `hashString` of the canonical JSON of the event at `sequence`. */
  readonly anchor: number;
  /** Running hash of the whole canonical content of events 1..sequence (`chainDigest`). */
  readonly digest: RunningHashState;
  readonly state: FoldState;
  readonly commands: CommandIndexCheckpoint;
  readonly keys: HashedKeyFilter;
  /** Where the record's last intact frame ends (for a writer that extends it). */
  readonly extent: CheckpointExtent;
}

/** What a writer encodes besides the key filter: everything a checkpoint restores but its IDs. */
export type CheckpointContent = Omit<DecodedCheckpoint, 'keys' | 'extent'>;

/** The canonical text of an event: what the anchor hashes. */
function canonicalEventText(event: DurableEventEnvelope): string {
  // SAFETY: envelopes are validated lossless JSON.
  return canonicalJson(event as unknown as JsonValue);
}

const LANE1 = 2654435761;
const LANE2 = 1597334677;
/** The lanes of the digest step in progress (`chainDigest` is synchronous and not reentrant). */
let lane1 = 0;
let lane2 = 0;

/** Feeds one 32-bit word into both lanes. */
function feedWord(word: number): void {
  lane1 = Math.imul(lane1 ^ word, LANE1);
  lane2 = Math.imul(lane2 ^ word, LANE2);
}

/** Feeds `text` as its length, then its UTF-16 code units two per word (length first: injective). */
function feedText(text: string): void {
  const length = text.length;
  feedWord(length);
  let index = 0;
  for (; index + 1 < length; index += 2) feedWord(text.charCodeAt(index) | (text.charCodeAt(index + 1) << 16));
  if (index < length) feedWord(text.charCodeAt(index));
}

/**
 * The words that open each kind of JSON value in the digest (and close arrays and objects). A
 * string's length is below 2^30, so no tag can be read as the length of an object's next key:
 * the words of a value spell it exactly, and two values feed the same words only if equal.
 */
export const DIGEST_TAGS = Object.freeze({
  null: 0xa1c60001,
  false: 0xa1c60002,
  true: 0xa1c60003,
  number: 0xa1c60004,
  string: 0xa1c60005,
  array: 0xa1c60006,
  object: 0xa1c60007,
  end: 0xa1c60008,
});

/**
 * Feeds the canonical content of a JSON value: a tag, then a number as the text of
 * `JSON.stringify`, a string by {@link feedText}, an array's elements, an object's members by key
 * in UTF-16 order (each key by {@link feedText}, then its value; members whose value is
 * `undefined` are absent, as in JSON), arrays and objects closed by the end tag. Equal JSON values
 * feed equal words whatever their key order: the content `canonicalJson` spells, without building
 * its text.
 */
function feedValue(value: unknown): void {
  if (typeof value === 'string') {
    feedWord(DIGEST_TAGS.string);
    feedText(value);
  } else if (typeof value === 'object') {
    if (value === null) feedWord(DIGEST_TAGS.null);
    else if (Array.isArray(value)) {
      feedWord(DIGEST_TAGS.array);
      for (let index = 0; index < value.length; index++) {
        const element: unknown = value[index];
        // JSON writes an `undefined` element as null.
        feedValue(element === undefined ? null : element);
      }
      feedWord(DIGEST_TAGS.end);
    } else {
      feedWord(DIGEST_TAGS.object);
      const object = value as Record<string, unknown>;
      const keys = Object.keys(object).sort();
      for (let index = 0; index < keys.length; index++) {
        // SAFETY: index < keys.length.
        const key = keys[index] as string;
        const member = object[key];
        if (member === undefined) continue;
        feedText(key);
        feedValue(member);
      }
      feedWord(DIGEST_TAGS.end);
    }
  } else if (typeof value === 'number') {
    feedWord(DIGEST_TAGS.number);
    feedText(String(value));
  } else feedWord(value === true ? DIGEST_TAGS.true : DIGEST_TAGS.false);
}

/**
 * The running digest after `event` (format 6): the event's whole canonical content (envelope and
 * payload, see {@link feedValue}), so any change to a stored event, and any event added, removed
 * or moved, changes every digest from there on. About 2 µs for a 270-byte event (ad-hoc timing),
 * against 0.4-0.6 µs for format 5's identity-only step and 7 µs for hashing `canonicalJson` text.
 */
export function chainDigest(digest: RunningHashState, event: DurableEventEnvelope): RunningHashState {
  lane1 = digest.h1;
  lane2 = digest.h2;
  feedValue(event);
  return { h1: lane1 >>> 0, h2: lane2 >>> 0 };
}

/** The anchor hash of the event a checkpoint stands at. */
export function anchorOf(event: DurableEventEnvelope): number {
  return hashString(canonicalEventText(event));
}

interface Header {
  format: number;
  projectorVersion: number;
  sessionId: string;
  sequence: number;
  eventId: string;
  anchor: number;
  digest: [number, number];
  keyCount: number;
  /** The live runs of earlier frames, `[offset, count]`; the frame's own run is implied. */
  runs: [number, number][];
  state: unknown;
  commands: { ranges: [string, number, number, number, boolean][]; lastCommandId: string | null; lastSequence: number | null };
}

const encoder = new TextEncoder();
/**
 * Where the header is encoded before it is copied into the record (used synchronously): a fresh
 * array per checkpoint cost first-touch page faults (the header holds up to 1,024 command ranges).
 */
let headerScratch = new Uint8Array(0);

const align8 = (value: number): number => Math.ceil(value / 8) * 8;

/** The hash state a frame's checksum starts from: the previous frame's checksum (0 for the first). */
function chainState(previous: number): RunningHashState {
  const low = previous % 4294967296;
  return { h1: (INITIAL_HASH_STATE.h1 ^ low) >>> 0, h2: (INITIAL_HASH_STATE.h2 ^ Math.floor(previous / 4294967296)) >>> 0 };
}

function encodeHeader(checkpoint: CheckpointContent, keyCount: number, runs: readonly CheckpointRun[]): Uint8Array {
  const header: Header = {
    format: CHECKPOINT_FORMAT,
    projectorVersion: checkpoint.projectorVersion,
    sessionId: checkpoint.sessionId,
    sequence: checkpoint.sequence,
    eventId: checkpoint.eventId,
    anchor: checkpoint.anchor,
    digest: [checkpoint.digest.h1, checkpoint.digest.h2],
    keyCount,
    runs: runs.map((run) => [run.offset, run.count]),
    state: checkpoint.state,
    commands: {
      ranges: checkpoint.commands.ranges.map((r) => [r.commandId, r.firstSequence, r.lastSequence, r.eventCount, r.contiguous]),
      lastCommandId: checkpoint.commands.lastCommandId ?? null,
      lastSequence: checkpoint.commands.lastSequence,
    },
  };
  const json = JSON.stringify(header);
  // UTF-8 takes at most 3 bytes per UTF-16 unit; the scratch is reused (see `headerScratch`).
  if (headerScratch.length < json.length * 3) headerScratch = new Uint8Array(json.length * 6);
  return headerScratch.subarray(0, encoder.encodeInto(json, headerScratch).written);
}

/** Bytes of a frame with a header of `headerBytes` and a run of `count` hashes. */
const frameBytes = (headerBytes: number, count: number): number => align8(FIXED_BYTES + headerBytes) + runBytes(count) + 8;

/**
 * Writes one frame at `offset` of `bytes` (which holds at least its size; bytes before `offset`
 * are the frames it extends, ending with checksum `previous`). `fill(run)` writes the frame's
 * sorted run into the view it gets. Returns the frame's end, checksum and run.
 */
function writeFrame(
  bytes: Uint8Array,
  offset: number,
  header: Uint8Array,
  count: number,
  previous: number,
  fill: (run: KeyRun) => void,
): { end: number; checksum: number; run: CheckpointRun } {
  const runOffset = align8(offset + FIXED_BYTES + header.length);
  const end = runOffset + runBytes(count) + 8;
  bytes.set(MAGIC, offset);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  view.setUint32(offset + 4, header.length, true);
  view.setUint32(offset + 8, count, true);
  view.setUint32(offset + 12, 0, true);
  bytes.set(header, offset + FIXED_BYTES);
  // A reused buffer holds old bytes: the padding after the header must read as zeros.
  bytes.fill(0, offset + FIXED_BYTES + header.length, runOffset);
  // So must a compact run's alignment padding (its last 4 bytes at most): the fill writes the rest.
  if (count > 0) bytes.fill(0, end - 16, end - 8);
  fill(runView(bytes.buffer, bytes.byteOffset + runOffset, count));
  const checksum = hashFrameBytes(bytes.subarray(offset, end - 8), chainState(previous));
  view.setFloat64(end - 8, checksum, true);
  return { end, checksum, run: { offset: runOffset, count } };
}

/** Views of `runs` in `bytes` (whose byte offset is a multiple of 8). */
function viewsOf(bytes: Uint8Array, runs: readonly CheckpointRun[]): KeyRun[] {
  return runs.map((run) => runView(bytes.buffer, bytes.byteOffset + run.offset, run.count));
}

/** Encodes a checkpoint as one compacted frame (its runs merged into one). */
export function encodeCheckpoint(checkpoint: Omit<DecodedCheckpoint, 'extent'>): DurableCheckpointRecord {
  const { keys, ...rest } = checkpoint;
  return encodeCompacted(rest, keys.runs, (bytes) => new ArrayBuffer(bytes)).record;
}

/** An encoded record and what its writer keeps to extend it later. */
interface EncodedCheckpoint {
  readonly record: DurableCheckpointRecord;
  readonly keys: HashedKeyFilter;
  readonly extent: CheckpointExtent;
}

/**
 * One compacted frame holding every hash of `runs` (each sorted; merged here), in a buffer from
 * `allocate(n)` (at least `n` bytes; a reused one is fine: every byte of the record is written).
 */
export function encodeCompacted(
  checkpoint: CheckpointContent,
  runs: readonly KeyRun[],
  allocate: (bytes: number) => ArrayBuffer,
): EncodedCheckpoint {
  let count = 0;
  for (const run of runs) count += run.length;
  const header = encodeHeader(checkpoint, count, []);
  const total = frameBytes(header.length, count);
  const bytes = new Uint8Array(allocate(total), 0, total);
  const frame = writeFrame(bytes, 0, header, count, 0, (into) => mergeRunsInto(runs, into));
  const extent: CheckpointExtent = { length: total, checksum: frame.checksum, runs: [frame.run], liveBytes: total };
  return { record: recordOf(checkpoint, bytes), keys: filterOf(bytes, extent.runs), extent };
}

/**
 * Appends a frame to the record `base` (its bytes, ending where `extent` says) holding the state
 * of `checkpoint` and the sorted hashes `fresh` merged with the runs at the end of the live list
 * that are not more than twice as large as what is merged so far (so sizes grow geometrically and
 * a record keeps O(log n) runs). `room(n)` returns a buffer of at least `n` bytes whose first
 * `extent.length` bytes are the base record (the same buffer when it has room). Returns `null`
 * when the record would hold more than `maxGrowth` times its live bytes (plus one frame): the
 * caller then writes a compacted record instead (default 1.5: at most a third of a record is dead).
 */
export function encodeExtension(
  checkpoint: CheckpointContent,
  extent: CheckpointExtent,
  base: Uint8Array,
  fresh: Float64Array,
  room: (bytes: number) => Uint8Array,
  maxGrowth = 1.5,
): EncodedCheckpoint | null {
  const runs = [...extent.runs];
  const merged: CheckpointRun[] = [];
  let count = fresh.length;
  for (;;) {
    const last = runs[runs.length - 1];
    if (last === undefined || last.count > 2 * count) break;
    runs.pop();
    merged.push(last);
    count += last.count;
  }
  let keyCount = count;
  let keptBytes = 0;
  for (const run of runs) {
    keyCount += run.count;
    keptBytes += runBytes(run.count);
  }
  const header = encodeHeader(checkpoint, keyCount, runs);
  const size = frameBytes(header.length, count);
  const total = extent.length + size;
  const liveBytes = keptBytes + size;
  if (total > maxGrowth * liveBytes + size) return null;
  const bytes = room(total).subarray(0, total);
  const sources = [...viewsOf(base, merged), fresh];
  const frame = writeFrame(bytes, extent.length, header, count, extent.checksum, (into) => mergeRunsInto(sources, into));
  const next: CheckpointExtent = { length: total, checksum: frame.checksum, runs: [...runs, frame.run], liveBytes };
  return { record: recordOf(checkpoint, bytes), keys: filterOf(bytes, next.runs), extent: next };
}

function recordOf(checkpoint: CheckpointContent, data: Uint8Array): DurableCheckpointRecord {
  return { sequence: checkpoint.sequence, eventId: checkpoint.eventId, data };
}

/** The filter over runs an encoder just wrote (or carried over from a checked record): not re-checked. */
function filterOf(bytes: Uint8Array, runs: readonly CheckpointRun[]): HashedKeyFilter {
  return HashedKeyFilter.ofWrittenRuns(viewsOf(bytes, runs));
}

const isInt = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);

/** The intact frames of `data`, in order, or why the first one is not. */
interface FrameWalk {
  frames: { offset: number; headerLength: number; run: CheckpointRun; end: number; checksum: number }[];
  /** Why the walk stopped before the end of the data (`undefined`: it reached the end). */
  stopped: string | undefined;
}

function walkFrames(bytes: Uint8Array): FrameWalk {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const frames: FrameWalk['frames'] = [];
  let offset = 0;
  let previous = 0;
  while (offset < bytes.length) {
    if (bytes.length - offset < FIXED_BYTES + 8) return { frames, stopped: 'corrupt: too short' };
    for (let index = 0; index < 4; index++) {
      if (bytes[offset + index] !== MAGIC[index]) return { frames, stopped: 'corrupt: bad magic' };
    }
    const headerLength = view.getUint32(offset + 4, true);
    const count = view.getUint32(offset + 8, true);
    const runOffset = align8(offset + FIXED_BYTES + headerLength);
    const end = runOffset + runBytes(count) + 8;
    if (view.getUint32(offset + 12, true) !== 0 || end > bytes.length) return { frames, stopped: 'corrupt: length' };
    const checksum = hashFrameBytes(bytes.subarray(offset, end - 8), chainState(previous));
    if (view.getFloat64(end - 8, true) !== checksum) return { frames, stopped: 'corrupt: checksum mismatch' };
    frames.push({ offset, headerLength, run: { offset: runOffset, count }, end, checksum });
    previous = checksum;
    offset = end;
  }
  return { frames, stopped: undefined };
}

/**
 * Position (sequence, event ID) of the checkpoint `data` stands for (its last intact frame) and
 * the bytes up to that frame's end, or `null` when no frame is intact. No store needs it (each
 * records the position beside the bytes); it shows what a record with a damaged or torn tail still
 * holds, for tests and tools that inspect raw records.
 */
export function checkpointPosition(data: Uint8Array): { sequence: EventSequence; eventId: EventId; length: number } | null {
  const bytes = data.byteOffset % 8 === 0 ? data : data.slice();
  const last = walkFrames(bytes).frames.at(-1);
  if (last === undefined) return null;
  const header = parseHeader(bytes, last.offset, last.headerLength);
  if (header === null || !isInt(header.sequence) || header.sequence < 1 || typeof header.eventId !== 'string') return null;
  // SAFETY: checked against the log (and validated as IDs by every store) before use.
  return { sequence: header.sequence as EventSequence, eventId: header.eventId as EventId, length: last.end };
}

function parseHeader(bytes: Uint8Array, offset: number, length: number): Header | null {
  try {
    const header = JSON.parse(
      new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes.subarray(offset + FIXED_BYTES, offset + FIXED_BYTES + length)),
    ) as unknown;
    return typeof header === 'object' && header !== null ? (header as Header) : null;
  } catch {
    return null;
  }
}

/** Decodes and checks a stored record (its last intact frame); a string names why it was rejected. */
export function decodeCheckpoint(record: DurableCheckpointRecord): DecodedCheckpoint | string {
  const data = record.data;
  if (!(data instanceof Uint8Array) || data.length < FIXED_BYTES + 8) return 'corrupt: too short';
  if (LEGACY_MAGICS.some((magic) => magic.every((byte, index) => data[index] === byte))) return 'unknown format';
  // Work on an aligned private copy (the float64 views need 8-byte alignment).
  const bytes = data.byteOffset % 8 === 0 ? data : data.slice();
  const walk = walkFrames(bytes);
  const last = walk.frames.at(-1);
  if (last === undefined) return walk.stopped ?? 'corrupt: too short';
  const header = parseHeader(bytes, last.offset, last.headerLength);
  if (header === null) return 'corrupt: header is not JSON';
  if (header.format !== CHECKPOINT_FORMAT) return 'unknown format';
  if (!isInt(header.projectorVersion) || !isInt(header.sequence) || header.sequence < 1 || !isInt(header.keyCount)) {
    return 'corrupt: header fields';
  }
  if (typeof header.sessionId !== 'string' || typeof header.eventId !== 'string' || !isInt(header.anchor)) {
    return 'corrupt: header fields';
  }
  if (header.sequence !== record.sequence || header.eventId !== record.eventId) return 'record position disagrees with its bytes';
  // Every live run must be the run of an intact frame before this one.
  const runAt = new Map<number, number>();
  for (const frame of walk.frames) if (frame !== last) runAt.set(frame.run.offset, frame.run.count);
  if (!Array.isArray(header.runs)) return 'corrupt: runs';
  const runs: CheckpointRun[] = [];
  for (const entry of header.runs) {
    if (!Array.isArray(entry) || entry.length !== 2 || runAt.get(entry[0]) !== entry[1]) return 'corrupt: runs';
    runAt.delete(entry[0]);
    runs.push({ offset: entry[0], count: entry[1] });
  }
  runs.push(last.run);
  const keys = HashedKeyFilter.fromRuns(viewsOf(bytes, runs));
  if (keys === null) return 'corrupt: key filter not sorted';
  if (header.keyCount !== keys.size) return 'corrupt: length';
  const state = restoreFoldState(header.state);
  const commands = restoreCommands(header.commands);
  if (state === null || commands === null || !Array.isArray(header.digest) || !isInt(header.digest[0]) || !isInt(header.digest[1])) {
    return 'corrupt: state';
  }
  let liveBytes = last.end - last.offset;
  for (const run of runs) if (run !== last.run) liveBytes += runBytes(run.count);
  return {
    // SAFETY: the brands are checked against the log before the checkpoint is used.
    sessionId: header.sessionId as SessionId,
    sequence: header.sequence as EventSequence,
    eventId: header.eventId as EventId,
    projectorVersion: header.projectorVersion,
    anchor: header.anchor,
    digest: { h1: header.digest[0], h2: header.digest[1] },
    state,
    commands,
    keys,
    extent: { length: last.end, checksum: last.checksum, runs, liveBytes },
  };
}

function restoreFoldState(raw: unknown): FoldState | null {
  if (typeof raw !== 'object' || raw === null) return null;
  // SAFETY: written by encodeCheckpoint from a FoldState and covered by the checksum.
  const s = raw as Record<string, unknown> & FoldState;
  if (!Array.isArray(s.recent)) return null;
  const recent: RecentEvent[] = (s.recent as RecentEvent[]).map((r) =>
    seal({ type: r.type, commandId: r.commandId, requestId: r.requestId, turnId: r.turnId, turn: r.turn }),
  );
  return seal({
    sessionId: s.sessionId,
    status: s.status,
    headSequence: s.headSequence,
    lastEventId: s.lastEventId,
    activeRequest: detach(s.activeRequest ?? null),
    completedRequests: s.completedRequests,
    lastRequest: detach(s.lastRequest ?? null),
    closedReason: s.closedReason === undefined ? undefined : detach(s.closedReason),
    previousCommandId: s.previousCommandId,
    recent: seal(recent),
  });
}

function restoreCommands(raw: Header['commands'] | undefined): CommandIndexCheckpoint | null {
  if (typeof raw !== 'object' || raw === null || !Array.isArray(raw.ranges)) return null;
  const ranges: CommandRange[] = [];
  for (const entry of raw.ranges) {
    if (!Array.isArray(entry) || entry.length !== 5) return null;
    const [commandId, firstSequence, lastSequence, eventCount, contiguous] = entry;
    // SAFETY: written by encodeCheckpoint from valid ranges and covered by the checksum.
    ranges.push({
      commandId: commandId as CommandId,
      firstSequence: firstSequence as EventSequence,
      lastSequence: lastSequence as EventSequence,
      eventCount,
      contiguous,
    });
  }
  return {
    ranges,
    lastCommandId: (raw.lastCommandId ?? undefined) as CommandId | undefined,
    lastSequence: raw.lastSequence as EventSequence | null,
  };
}
