/**
 * The bytes of a projection checkpoint.
 *
 * Layout (little-endian): `"ALCP"` magic, u32 header length, the header as UTF-8 JSON, zero
 * padding to a multiple of 8, the key filter (`keyCount` float64 hashes, sorted), and a float64
 * checksum of everything before it. A record that fails any check decodes to a reason string,
 * never to a partial checkpoint.
 *
 * The checksum (format 2) is the hash of the bytes before the filter, continued with the filter's
 * order-independent word sum (`addWords`) and finished to 53 bits. The journal keeps that sum with
 * its filter and adds only the new hashes, so a write no longer hashes every key again (format 1
 * hashed all the bytes: O(total) per checkpoint). A changed byte anywhere is still detected: in the
 * header region by the byte hash, in a filter entry because the sum's mix is a bijection, and a
 * reordered filter by the sortedness check. Format 2 also hashes keys with `hashKey` (two code
 * units per round) instead of `hashString`, so format-1 filters cannot be read: such a record is
 * discarded as an unknown format and the next open folds the log and writes a format-2 one.
 */
import type { DurableEventEnvelope } from '../../protocol/events.js';
import { canonicalJson, type JsonValue } from '../../protocol/json.js';
import type { CommandId, EventId, EventSequence, SessionId } from '../../protocol/ids.js';
import type { CommandIndexCheckpoint, CommandRange } from '../journal/command-index.js';
import type { FoldState, RecentEvent } from '../projector/fold-state.js';
import { detach, seal } from '../projector/frozen-data.js';
import type { DurableCheckpointRecord } from './contract.js';
import { feedHashJoined, feedWordSum, finishHash, hashBytes, hashBytesState, hashString, type RunningHashState } from './hash.js';
import { HashedKeyFilter } from './key-filter.js';

/** Version of this byte layout. */
export const CHECKPOINT_FORMAT = 2;
const MAGIC = [0x41, 0x4c, 0x43, 0x50];

/** Everything a checkpoint restores, decoded. */
export interface DecodedCheckpoint {
  readonly sessionId: SessionId;
  readonly sequence: EventSequence;
  readonly eventId: EventId;
  readonly projectorVersion: number;
  /** `hashString` of the canonical JSON of the event at `sequence`. */
  readonly anchor: number;
  /** Running hash of the identities (`eventIdentityText`) of events 1..sequence. */
  readonly digest: RunningHashState;
  readonly state: FoldState;
  readonly commands: CommandIndexCheckpoint;
  readonly keys: HashedKeyFilter;
}

/** The canonical text of an event: what the digest and the anchor hash. */
export function canonicalEventText(event: DurableEventEnvelope): string {
  // SAFETY: envelopes are validated lossless JSON.
  return canonicalJson(event as unknown as JsonValue);
}

/**
 * What the running digest chains for one event: its identity (sequence, store-assigned event ID,
 * type, command, commit time), not its body. Canonicalising every body on the append path costs
 * more than the checkpoint is worth; bodies are covered where it matters on open, at the anchor.
 */
export function eventIdentityText(event: DurableEventEnvelope): string {
  return `${event.sequence}|${event.eventId}|${event.type}|${event.commandId ?? ''}|${event.recordedAt}`;
}

/** The running digest after `event`. */
export function chainDigest(digest: RunningHashState, event: DurableEventEnvelope): RunningHashState {
  // The same lanes as feeding `eventIdentityText(event)`, without building that string.
  return feedHashJoined(digest, [String(event.sequence), event.eventId, event.type, event.commandId ?? '', event.recordedAt]);
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
  state: unknown;
  commands: { ranges: [string, number, number, number, boolean][]; lastCommandId: string | null; lastSequence: number | null };
}

const encoder = new TextEncoder();
/**
 * Where the header is encoded before it is copied into the record (used synchronously): a fresh
 * array per checkpoint cost first-touch page faults (the header holds up to 1,024 command ranges).
 */
let headerScratch = new Uint8Array(0);

/** Encodes a checkpoint. */
export function encodeCheckpoint(checkpoint: DecodedCheckpoint): DurableCheckpointRecord {
  const { keys, ...rest } = checkpoint;
  return encodeCheckpointAdding(rest, keys, []).record;
}

/**
 * Encodes a checkpoint whose key filter is `base` plus the hashes of `added`, merging them straight
 * into the record's bytes. Returns the record and the merged filter, which views those bytes.
 * `allocate(n)` supplies a buffer of at least `n` bytes (a reused one is fine: every byte of the
 * record is written); `base` must not view that buffer.
 */
export function encodeCheckpointAdding(
  checkpoint: Omit<DecodedCheckpoint, 'keys'>,
  base: HashedKeyFilter,
  added: Iterable<string>,
  allocate: (bytes: number) => ArrayBuffer = (bytes) => new ArrayBuffer(bytes),
): { record: DurableCheckpointRecord; keys: HashedKeyFilter } {
  let bytes: Uint8Array = new Uint8Array(0);
  let total = 0;
  let headerBytes: Uint8Array = new Uint8Array(0);
  // The header names the key count, so it is encoded once the merge knows that count.
  const keys = base.withKeysInto(added, (count) => {
    const header: Header = {
      format: CHECKPOINT_FORMAT,
      projectorVersion: checkpoint.projectorVersion,
      sessionId: checkpoint.sessionId,
      sequence: checkpoint.sequence,
      eventId: checkpoint.eventId,
      anchor: checkpoint.anchor,
      digest: [checkpoint.digest.h1, checkpoint.digest.h2],
      keyCount: count,
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
    headerBytes = headerScratch.subarray(0, encoder.encodeInto(json, headerScratch).written);
    const keysOffset = Math.ceil((8 + headerBytes.length) / 8) * 8;
    total = keysOffset + count * 8 + 8;
    const buffer = allocate(total);
    bytes = new Uint8Array(buffer, 0, total);
    // A reused buffer holds old bytes: the padding after the header must read as zeros.
    bytes.fill(0, 8 + headerBytes.length, keysOffset);
    return new Float64Array(buffer, keysOffset, count);
  });
  bytes.set(MAGIC, 0);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  view.setUint32(4, headerBytes.length, true);
  bytes.set(headerBytes, 8);
  view.setFloat64(total - 8, checksumOf(bytes.subarray(0, total - 8 - keys.size * 8), keys), true);
  return { record: { sequence: checkpoint.sequence, eventId: checkpoint.eventId, data: bytes }, keys };
}

/** The format-2 checksum: `prefix` (magic, header, padding) hashed, then the filter's word sum. */
function checksumOf(prefix: Uint8Array, keys: HashedKeyFilter): number {
  return finishHash(feedWordSum(hashBytesState(prefix), keys.sum));
}

const isInt = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value);

/** Decodes and checks a stored record; a string names why it was rejected. */
export function decodeCheckpoint(record: DurableCheckpointRecord): DecodedCheckpoint | string {
  const data = record.data;
  if (!(data instanceof Uint8Array) || data.length < 24) return 'corrupt: too short';
  for (let index = 0; index < 4; index++) if (data[index] !== MAGIC[index]) return 'corrupt: bad magic';
  // Work on an aligned private copy (the float64 views need 8-byte alignment).
  const bytes = data.byteOffset % 8 === 0 ? data : data.slice();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(4, true);
  if (8 + headerLength > bytes.length - 8) return checksumFailure(bytes, view, 'corrupt: header length');
  const keysOffset = Math.ceil((8 + headerLength) / 8) * 8;
  const keyBytes = bytes.length - 8 - keysOffset;
  if (keyBytes < 0 || keyBytes % 8 !== 0) return checksumFailure(bytes, view, 'corrupt: length');
  const keys = HashedKeyFilter.fromSorted(new Float64Array(bytes.buffer, bytes.byteOffset + keysOffset, keyBytes / 8));
  if (keys === null) return checksumFailure(bytes, view, 'corrupt: key filter not sorted');
  if (view.getFloat64(bytes.length - 8, true) !== checksumOf(bytes.subarray(0, keysOffset), keys)) {
    return checksumFailure(bytes, view, 'corrupt: checksum mismatch');
  }
  let header: Header;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes.subarray(8, 8 + headerLength))) as Header;
  } catch {
    return 'corrupt: header is not JSON';
  }
  if (typeof header !== 'object' || header === null || header.format !== CHECKPOINT_FORMAT) return 'unknown format';
  if (!isInt(header.projectorVersion) || !isInt(header.sequence) || header.sequence < 1 || !isInt(header.keyCount)) {
    return 'corrupt: header fields';
  }
  if (typeof header.sessionId !== 'string' || typeof header.eventId !== 'string' || !isInt(header.anchor)) {
    return 'corrupt: header fields';
  }
  if (header.sequence !== record.sequence || header.eventId !== record.eventId) return 'record position disagrees with its bytes';
  if (header.keyCount !== keys.size) return 'corrupt: length';
  const state = restoreFoldState(header.state);
  const commands = restoreCommands(header.commands);
  if (state === null || commands === null || !Array.isArray(header.digest) || !isInt(header.digest[0]) || !isInt(header.digest[1])) {
    return 'corrupt: state';
  }
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
  };
}

/**
 * `reason` for a record that fails a format-2 check, unless it is an intact format-1 record (its
 * checksum hashed every byte): that one is reported as an unknown format, not as corruption.
 */
function checksumFailure(bytes: Uint8Array, view: DataView, reason: string): string {
  return view.getFloat64(bytes.length - 8, true) === hashBytes(bytes.subarray(0, bytes.length - 8)) ? 'unknown format' : reason;
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
