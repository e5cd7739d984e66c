/**
 * Command content and idempotency matching.
 *
 * A journal command is identified by its `commandId`; whether a resubmission is "the same
 * command" is decided by its content, never by object identity:
 * 1. the content of one event is the canonical JSON of `type`, `data`, the correlation IDs
 *    (`requestId`, `turnId`, `modelAttemptId`, `toolAttemptId`) and `causationEventId`;
 * 2. `occurredAt` joins the content only when the resubmitted draft states it (a stored event
 *    always has one, defaulted to `recordedAt`, so an omitted domain time cannot be compared);
 * 3. store-assigned fields (`eventId`, `sequence`, `sessionId`, `recordedAt`, `schemaVersion`)
 *    and the stamped `commandId` never take part;
 * 4. two commands match when they have the same number of events and every event's content is
 *    equal, in order.
 */
import type { DurableEventDraft, DurableEventEnvelope } from '../../protocol/events.js';
import { canonicalJson, jsonEquals, type JsonObject, type JsonValue } from '../../protocol/json.js';

/** Envelope fields that form an event's content, besides the conditional `occurredAt`. */
const COMMAND_CONTENT_FIELDS = [
  'type',
  'data',
  'requestId',
  'turnId',
  'modelAttemptId',
  'toolAttemptId',
  'causationEventId',
] as const;

type ContentSource = DurableEventDraft | DurableEventEnvelope;

function field(event: ContentSource, name: string): unknown {
  // SAFETY: drafts and envelopes are plain parsed objects; reading an absent key yields undefined.
  return (event as unknown as Record<string, unknown>)[name];
}

/**
 * Canonical content of one event. `withOccurredAt` adds the event's `occurredAt` (used when the
 * submitted draft states a domain time).
 */
export function eventContentKey(event: ContentSource, withOccurredAt: boolean): string {
  const content: JsonObject = {};
  for (const name of COMMAND_CONTENT_FIELDS) {
    const value = field(event, name);
    // SAFETY: parsed drafts and envelopes hold lossless JSON only.
    if (value !== undefined) content[name] = value as JsonValue;
  }
  if (withOccurredAt) {
    const occurredAt = field(event, 'occurredAt');
    if (typeof occurredAt === 'string') content['occurredAt'] = occurredAt;
  }
  return canonicalJson(content);
}

/** True when the draft states its own domain time. */
function draftStatesOccurredAt(draft: DurableEventDraft): boolean {
  return field(draft, 'occurredAt') !== undefined;
}

/** Canonical content of a submitted command: one key per draft. */
export function commandContentKeys(drafts: readonly DurableEventDraft[]): string[] {
  return drafts.map((draft) => eventContentKey(draft, draftStatesOccurredAt(draft)));
}

/**
 * True when two events have the same content: the same as comparing their
 * {@link eventContentKey}s (with `withOccurredAt` for both), without serialising them.
 */
function sameEventContent(a: ContentSource, b: ContentSource, withOccurredAt: boolean): boolean {
  for (const name of COMMAND_CONTENT_FIELDS) {
    const left = field(a, name);
    const right = field(b, name);
    if (left === undefined || right === undefined) {
      if (left !== right) return false;
      continue;
    }
    // SAFETY: parsed drafts and envelopes hold lossless JSON only, on which structural equality
    // and equal canonical JSON strings agree.
    if (!jsonEquals(left as JsonValue, right as JsonValue)) return false;
  }
  if (!withOccurredAt) return true;
  const left = field(a, 'occurredAt');
  const right = field(b, 'occurredAt');
  return (typeof left === 'string' ? left : undefined) === (typeof right === 'string' ? right : undefined);
}

/**
 * Index of the first stored event whose content differs from the submitted drafts, `-1` when
 * the stored command is the same command, or `stored.length` when the counts differ.
 */
export function findCommandMismatch(
  drafts: readonly DurableEventDraft[],
  stored: readonly DurableEventEnvelope[],
): number {
  const count = Math.min(drafts.length, stored.length);
  for (let index = 0; index < count; index++) {
    // SAFETY: index < both lengths.
    const draft = drafts[index] as DurableEventDraft;
    const event = stored[index] as DurableEventEnvelope;
    if (!sameEventContent(draft, event, draftStatesOccurredAt(draft))) return index;
  }
  return drafts.length === stored.length ? -1 : count;
}
