/**
 * Copying a session's events into another session or store, idempotently and resumably.
 *
 * Stores assign event IDs, sequences and `recordedAt` themselves, so a copy re-appends each event
 * as a draft (keeping `occurredAt` and every correlation ID) and keeps a map from source to
 * target event IDs through which `causationEventId` is rewritten. A causation can only be mapped
 * once the event it names has its target ID, so an event whose cause is still in the unsent
 * batch sends that batch first (an agent's Request terminal names the Turn terminal committed
 * with it).
 *
 * A copy reads the source twice. The first pass writes nothing: it checks that every causation
 * names an earlier event of the source and verifies the target's existing events against the
 * source, event for event (each must be the same draft: type, data, correlation IDs,
 * `occurredAt`, mapped causation, at the same sequence), which also rebuilds the ID map. So a copy
 * it refuses leaves the target as it was. The second pass appends the missing events, with
 * compare-and-append pinned to the target head (a concurrent writer fails the copy instead of
 * interleaving). A copy killed at any point therefore resumes where the target's log ends; a
 * finished copy run again appends nothing.
 */
import type { DurableEventStore } from '../../core/store.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import type { DurableEventDraft, DurableEventEnvelope } from '../../protocol/events.js';
import { EventId, type EventSequence, type SessionId } from '../../protocol/ids.js';
import { canonicalJson, type JsonValue } from '../../protocol/json.js';
import { MAX_BATCH_BYTES, MAX_BATCH_EVENTS, MAX_READ_LIMIT } from '../../protocol/limits.js';

/** Progress of a copy, reported after every page. */
export interface CopyProgress {
  /** Events checked or written so far. */
  done: number;
  /** Events to copy in total. */
  total: number;
}

/** Options of {@link copySessionEvents}. */
interface CopySessionEventsOptions {
  /** Copy only the first `upTo` events (default: the whole source log as of the start). */
  upTo?: number;
  /** Replaces the source's first event (a fork writes its own `session_created`). */
  firstDraft?: DurableEventDraft;
  /** Events per append, 1..1000 (default 500); batches also stay below the byte limit. */
  batchSize?: number;
  signal?: AbortSignal;
  onProgress?: (progress: CopyProgress) => void;
}

/** What {@link copySessionEvents} did. */
interface CopySessionEventsResult {
  /** Events already in the target and verified. */
  verified: number;
  /** Events appended by this call. */
  appended: number;
  /** The target's head afterwards. */
  headSequence: number | null;
  /** Source event ID -> target event ID, for every copied event. */
  eventIdMap: Map<string, string>;
}

/** The draft form of a stored event, with causation mapped through `idMap`. */
function draftOfEnvelope(event: DurableEventEnvelope, idMap: ReadonlyMap<string, string>): DurableEventDraft {
  const {
    schemaVersion: _version,
    eventId: _eventId,
    sequence: _sequence,
    sessionId: _sessionId,
    recordedAt: _recordedAt,
    causationEventId,
    ...rest
  } = event;
  const draft: Record<string, unknown> = { ...rest };
  if (causationEventId !== undefined) {
    const mapped = idMap.get(causationEventId);
    if (mapped === undefined) {
      throw new DurableEventStoreError(
        'DURABLE_EVENT_CORRUPT_LOG',
        `event ${event.sequence} names causation ${causationEventId}, which is not an earlier copied event`,
      );
    }
    draft['causationEventId'] = EventId(mapped);
  }
  // SAFETY: an envelope minus the store-assigned fields is a draft of the same type.
  return draft as DurableEventDraft;
}

function sameDraft(a: DurableEventDraft, b: DurableEventDraft, ignoreTime: boolean): boolean {
  const strip = (draft: DurableEventDraft): JsonValue => {
    const { occurredAt, ...rest } = draft as DurableEventDraft & { occurredAt?: string };
    // SAFETY: drafts are lossless JSON (validated by the store that returned them).
    return (ignoreTime ? rest : { ...rest, occurredAt: occurredAt ?? null }) as unknown as JsonValue;
  };
  return canonicalJson(strip(a)) === canonicalJson(strip(b));
}

/** Reads events `from + 1 .. upTo` page by page, checking that the sequences are contiguous. */
async function readAll(
  store: DurableEventStore,
  sessionId: SessionId,
  from: number,
  upTo: number,
  signal: AbortSignal | undefined,
  onPage: (events: DurableEventEnvelope[]) => Promise<void> | void,
): Promise<void> {
  let seen = from;
  while (seen < upTo) {
    const page = await store.read(sessionId, {
      ...(seen === 0 ? {} : { after: seen as EventSequence }),
      limit: Math.min(MAX_READ_LIMIT, upTo - seen),
      ...(signal === undefined ? {} : { signal }),
    });
    if (page.events.length === 0) break;
    const events = page.events.slice(0, upTo - seen);
    for (const [index, event] of events.entries()) {
      if (event.sequence !== seen + index + 1) {
        throw new DurableEventStoreError(
          'DURABLE_EVENT_CORRUPT_LOG',
          `session ${sessionId}: expected sequence ${seen + index + 1}, read ${event.sequence}`,
        );
      }
    }
    await onPage(events);
    seen += events.length;
    if (!page.hasMore) break;
  }
}

function encodedBytes(draft: DurableEventDraft): number {
  return new TextEncoder().encode(JSON.stringify(draft)).length + 256;
}

/**
 * Copies `sourceId` of `source` into `targetId` of `target` (see the module comment).
 *
 * @throws DurableEventStoreError, refusing before any write with
 * `DURABLE_EVENT_INVALID_INPUT` when the source has no such session (no events) or `upTo` is out
 * of range, `DURABLE_EVENT_CORRUPT_LOG` when the target already holds events that are not the
 * source's or a source event names a causation that is not an earlier event; and
 * `DURABLE_EVENT_SEQUENCE_CONFLICT` when another writer appends to the target meanwhile
 */
export async function copySessionEvents(
  source: DurableEventStore,
  sourceId: SessionId,
  target: DurableEventStore,
  targetId: SessionId,
  options: CopySessionEventsOptions = {},
): Promise<CopySessionEventsResult> {
  const signal = options.signal;
  const sourceHead = (await source.getHeadSequence(sourceId, signal === undefined ? {} : { signal })) ?? 0;
  if (sourceHead === 0) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', `the source has no session ${sourceId} (no events); nothing to copy`);
  }
  const upTo = options.upTo === undefined ? sourceHead : options.upTo;
  if (!Number.isSafeInteger(upTo) || upTo < 1 || upTo > sourceHead) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_INVALID_INPUT',
      `the source session ${sourceId} has ${sourceHead} events; cannot copy ${upTo}`,
    );
  }
  const batchSize = Math.min(MAX_BATCH_EVENTS, Math.max(1, options.batchSize ?? 500));
  const idMap = new Map<string, string>();
  /** Target IDs already verified, mapped to themselves (to read the target's own causations). */
  const targetIdentity = new Map<string, string>();
  const targetHead = (await target.getHeadSequence(targetId, signal === undefined ? {} : { signal })) ?? 0;
  if (targetHead > upTo) {
    throw new DurableEventStoreError(
      'DURABLE_EVENT_CORRUPT_LOG',
      `the target session ${targetId} already has ${targetHead} events, more than the ${upTo} to copy`,
    );
  }
  const targetEvents: DurableEventEnvelope[] = [];
  let verified = 0;
  let appended = 0;
  let head: number | null = targetHead === 0 ? null : targetHead;
  const report = (): void => options.onProgress?.({ done: verified + appended, total: upTo });
  if (targetHead > 0) {
    await readAll(target, targetId, 0, targetHead, signal, (events) => {
      targetEvents.push(...events);
    });
  }

  // 1. Check every causation and verify the target's prefix (rebuilding the ID map); no writes.
  const earlier = new Set<string>();
  await readAll(source, sourceId, 0, upTo, signal, (events) => {
    for (const event of events) {
      if (event.causationEventId !== undefined && !earlier.has(event.causationEventId)) {
        throw new DurableEventStoreError(
          'DURABLE_EVENT_CORRUPT_LOG',
          `the source session ${sourceId} is not copyable: event ${event.sequence} names causation ${event.causationEventId}, which is not an earlier event of it (run verify)`,
        );
      }
      earlier.add(event.eventId);
      const existing = targetEvents[event.sequence - 1];
      if (existing === undefined) continue;
      const replaced = event.sequence === 1 ? options.firstDraft : undefined;
      const draft = replaced ?? draftOfEnvelope(event, idMap);
      if (!sameDraft(draftOfEnvelope(existing, targetIdentity), draft, replaced !== undefined)) {
        throw new DurableEventStoreError(
          'DURABLE_EVENT_CORRUPT_LOG',
          `the target session ${targetId} differs from the source at sequence ${event.sequence} (${existing.type} vs ${event.type}); refusing to copy over it`,
        );
      }
      idMap.set(event.eventId, existing.eventId);
      targetIdentity.set(existing.eventId, existing.eventId);
      verified += 1;
    }
  });
  earlier.clear();
  targetEvents.length = 0;
  if (verified > 0) report();

  // 2. Append the events after the target's head.
  let pending: DurableEventDraft[] = [];
  let pendingIds: string[] = [];
  let pendingBytes = 0;
  const flush = async (): Promise<void> => {
    if (pending.length === 0) return;
    const result = await target.append(targetId, pending, {
      expectedLastSequence: head === null ? null : (head as EventSequence),
      ...(signal === undefined ? {} : { signal }),
    });
    for (const [index, event] of result.events.entries()) {
      const sourceEventId = pendingIds[index];
      if (sourceEventId !== undefined) idMap.set(sourceEventId, event.eventId);
    }
    head = result.lastSequence;
    appended += pending.length;
    pending = [];
    pendingIds = [];
    pendingBytes = 0;
    report();
  };
  await readAll(source, sourceId, targetHead, upTo, signal, async (events) => {
    for (const event of events) {
      // The cause is in the unsent batch: send it, so the cause has its target ID.
      if (event.causationEventId !== undefined && !idMap.has(event.causationEventId)) await flush();
      const draft =
        event.sequence === 1 && options.firstDraft !== undefined ? options.firstDraft : draftOfEnvelope(event, idMap);
      const bytes = encodedBytes(draft);
      if (pending.length >= batchSize || (pending.length > 0 && pendingBytes + bytes > MAX_BATCH_BYTES)) await flush();
      pending.push(draft);
      pendingIds.push(event.eventId);
      pendingBytes += bytes;
    }
    await flush();
  });
  await flush();
  return { verified, appended, headSequence: head, eventIdMap: idMap };
}
