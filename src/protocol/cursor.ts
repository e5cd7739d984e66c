/**
 * Event cursors.
 *
 * A cursor names one event by session, sequence *and* event id, so a reader that reconnects after
 * the log was replaced or truncated can detect it and fail closed instead of skipping events.
 * It is a strictly versioned JSON object with exactly four keys; every parser here rejects
 * anything else with `DURABLE_EVENT_INVALID_CURSOR`. For URLs and SSE ids it travels as
 * base64url of its canonical JSON, and decoding insists on that exact canonical spelling.
 */
import { z } from 'zod';
import { decodeBase64Url, encodeBase64Url } from './base64url.js';
import { DurableEventStoreError } from './errors.js';
import { eventIdSchema, eventSequenceSchema, sessionIdSchema } from './event-schemas.js';
import type { EventId, EventSequence, SessionId } from './ids.js';
import { canonicalJson } from './json.js';

/** Current cursor format version. */
export const DURABLE_EVENT_CURSOR_VERSION = 1;
/** Longest accepted cursor text (JSON or base64url form), in UTF-16 code units. */
export const MAX_CURSOR_TEXT_LENGTH = 8192;

/** Names one event of one session's log. */
export interface DurableEventCursor {
  version: 1;
  sessionId: SessionId;
  sequence: EventSequence;
  eventId: EventId;
}

const cursorSchema = z.strictObject({
  version: z.literal(DURABLE_EVENT_CURSOR_VERSION),
  sessionId: sessionIdSchema,
  sequence: eventSequenceSchema,
  eventId: eventIdSchema,
});

function invalidCursor(problem: string, cause?: unknown): DurableEventStoreError {
  return new DurableEventStoreError(
    'DURABLE_EVENT_INVALID_CURSOR',
    `invalid cursor: ${problem}`,
    cause === undefined ? undefined : { cause },
  );
}

function checkCursor(value: unknown): DurableEventCursor {
  const result = cursorSchema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? '' : `${issue.path.map(String).join('.')}: `;
  throw invalidCursor(`${where}${issue?.message ?? 'invalid'}`);
}

/**
 * Builds the cursor of an event (an envelope, or its three identifying parts). The parts are
 * checked at run time too; a bad one throws `DURABLE_EVENT_INVALID_CURSOR`.
 *
 * @example
 * const cursor = durableEventCursor(page.events.at(-1)!);
 */
export function durableEventCursor(event: {
  sessionId: SessionId;
  sequence: EventSequence;
  eventId: EventId;
}): DurableEventCursor {
  return checkCursor({
    version: DURABLE_EVENT_CURSOR_VERSION,
    sessionId: event.sessionId,
    sequence: event.sequence,
    eventId: event.eventId,
  });
}

/**
 * Reads a cursor from its object form or its JSON text. Requires exactly `version` (1),
 * `sessionId`, `sequence` and `eventId`; anything else throws `DURABLE_EVENT_INVALID_CURSOR`.
 */
export function parseDurableEventCursor(value: unknown): DurableEventCursor {
  if (typeof value !== 'string') return checkCursor(value);
  if (value.length > MAX_CURSOR_TEXT_LENGTH) throw invalidCursor('text too long');
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw invalidCursor('not JSON', error);
  }
  return checkCursor(parsed);
}

/** Compact text form for URLs and SSE ids: base64url of the cursor's canonical JSON. */
export function encodeDurableEventCursor(cursor: DurableEventCursor): string {
  const checked = checkCursor(cursor);
  return encodeBase64Url(new TextEncoder().encode(canonicalJson({ ...checked })));
}

/** Reads {@link encodeDurableEventCursor}'s output; any other text throws `DURABLE_EVENT_INVALID_CURSOR`. */
export function decodeDurableEventCursor(text: unknown): DurableEventCursor {
  if (typeof text !== 'string') throw invalidCursor('expected a string');
  if (text.length === 0 || text.length > MAX_CURSOR_TEXT_LENGTH) throw invalidCursor('bad length');
  const bytes = decodeBase64Url(text);
  if (bytes === undefined) throw invalidCursor('not base64url');
  let json: string;
  try {
    json = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch (error) {
    throw invalidCursor('not UTF-8', error);
  }
  const cursor = parseDurableEventCursor(json);
  if (encodeDurableEventCursor(cursor) !== text) throw invalidCursor('not in canonical form');
  return cursor;
}
