/**
 * Copying a session's events into another session or store, idempotently and resumably.
 *
 * Stores assign event IDs, sequences and `recordedAt` themselves, so a copy re-appends each event
 * as a draft (keeping `occurredAt` and every correlation ID) and keeps a map from source to
 * target event IDs through which `causationEventId` is rewritten. Resuming is verification: the
 * target's existing events are read beside the source's, event for event; each must be the same
 * draft (type, data, correlation IDs, `occurredAt`, mapped causation) at the same sequence, which
 * also rebuilds the ID map. Only then are the missing events appended, with compare-and-append
 * pinned to the target head (a concurrent writer fails the copy instead of interleaving). A copy
 * killed at any point therefore resumes where the target's log ends; a finished copy run again
 * appends nothing.
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
export interface CopySessionEventsOptions {
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
export interface CopySessionEventsResult {
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
export function draftOfEnvelope(event: DurableEventEnvelope, idMap: ReadonlyMap<string, string>): DurableEventDraft {
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
        'DURABLE_EVENT_INVALID_INPUT',
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

async function readAll(
  store: DurableEventStore,
  sessionId: SessionId,
  upTo: number,
  signal: AbortSignal | undefined,
  onPage: (events: DurableEventEnvelope[]) => Promise<void> | void,
): Promise<void> {
  let after: DurableEventEnvelope | undefined;
  let seen = 0;
  while (seen < upTo) {
    const page = await store.read(sessionId, {
      ...(after === undefined ? {} : { after: after.sequence }),
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
    after = events[events.length - 1];
    if (!page.hasMore) break;
  }
}

function encodedBytes(draft: DurableEventDraft): number {
  return new TextEncoder().encode(JSON.stringify(draft)).length + 256;
}

/**
 * Copies `sourceId` of `source` into `targetId` of `target` (see the module comment).
 *
 * @throws DurableEventStoreError `DURABLE_EVENT_CORRUPT_LOG` when the target already holds events
 * that are not the source's, `DURABLE_EVENT_SEQUENCE_CONFLICT` when another writer appends meanwhile
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
  const upTo = options.upTo === undefined ? sourceHead : options.upTo;
  if (!Number.isSafeInteger(upTo) || upTo < 0 || upTo > sourceHead) {
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
  // 1. Verify the target's prefix against the source, rebuilding the ID map.
  const targetEvents: DurableEventEnvelope[] = [];
  let verified = 0;
  let appended = 0;
  let head: number | null = targetHead === 0 ? null : targetHead;
  const report = (): void => options.onProgress?.({ done: verified + appended, total: upTo });
  if (targetHead > 0) {
    await readAll(target, targetId, targetHead, signal, (events) => {
      targetEvents.push(...events);
    });
  }
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
  await readAll(source, sourceId, upTo, signal, async (events) => {
    for (const event of events) {
      const draft =
        event.sequence === 1 && options.firstDraft !== undefined ? options.firstDraft : draftOfEnvelope(event, idMap);
      const existing = targetEvents[event.sequence - 1];
      if (existing !== undefined) {
        const ignoreTime = event.sequence === 1 && options.firstDraft !== undefined;
        if (!sameDraft(draftOfEnvelope(existing, targetIdentity), draft, ignoreTime)) {
          throw new DurableEventStoreError(
            'DURABLE_EVENT_CORRUPT_LOG',
            `the target session ${targetId} differs from the source at sequence ${event.sequence} (${existing.type} vs ${event.type}); refusing to copy over it`,
          );
        }
        idMap.set(event.eventId, existing.eventId);
        targetIdentity.set(existing.eventId, existing.eventId);
        verified += 1;
        continue;
      }
      const bytes = encodedBytes(draft);
      if (pending.length >= batchSize || (pending.length > 0 && pendingBytes + bytes > MAX_BATCH_BYTES)) await flush();
      pending.push(draft);
      pendingIds.push(event.eventId);
      pendingBytes += bytes;
    }
    if (verified > 0 && appended === 0 && pending.length === 0) report();
    await flush();
  });
  await flush();
  return { verified, appended, headSequence: head, eventIdMap: idMap };
}
