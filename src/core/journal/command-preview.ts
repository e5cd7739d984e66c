/**
 * Preview of a command before anything is written.
 *
 * 1. Fork the journal's projector (cheap: it shares persistent state, and its used-ID set is a
 *    view of the projector's, O(layers); the fork is dropped after this call) and fold the command's
 *    drafts into the fork as synthetic envelopes: placeholder event IDs, sequences continuing the
 *    head, `recordedAt` = now. Any invariant the projector enforces rejects the command here.
 * 2. Before each Request terminal draft, check its anchor: it must name, in `causationEventId`,
 *    the active Request's latest boundary event as the fork sees it at that point. The only
 *    exception is a terminal draft that directly follows a terminal Turn draft of the same
 *    Request in the same command: that Turn event is the boundary, and its ID does not exist yet.
 *    The projector accepts a missing causation (old writers); the journal does not let new
 *    writes be unanchored, so a decision taken against an older boundary cannot commit.
 * The real projector is never touched; on rejection nothing is written.
 */
import { DurableEventProjectionError } from '../../protocol/errors.js';
import {
  DURABLE_EVENT_SCHEMA_VERSION,
  isRequestTerminalType,
  isTurnTerminalType,
  type DurableEventDraft,
  type DurableEventEnvelope,
} from '../../protocol/events.js';
import type { EventId, EventSequence, SessionId } from '../../protocol/ids.js';
import type { DurableSessionProjector } from '../projector/index.js';

/** Facts the preview needs besides the drafts. */
interface CommandPreviewContext {
  sessionId: SessionId;
  head: EventSequence | null;
  /** Timestamp used as `recordedAt` of the synthetic envelopes. */
  nowIso: string;
}

/**
 * Random per process (drawn on first use: some runtimes refuse random values at module scope):
 * synthetic IDs never meet a real event's ID (and never reach the log).
 */
let previewIdPrefix: string | undefined;
let previewCounter = 0;

function syntheticEnvelope(
  draft: DurableEventDraft,
  sessionId: SessionId,
  sequence: number,
  eventId: string,
  nowIso: string,
): DurableEventEnvelope {
  const { occurredAt, ...rest } = draft;
  // SAFETY: same construction as the store's (log-engine `planAppend`): adding store fields to a
  // validated draft keeps its discriminant and payload type. The ID (a short printable string)
  // and the sequence (a positive integer) are well-formed by construction.
  return {
    schemaVersion: DURABLE_EVENT_SCHEMA_VERSION,
    eventId: eventId as EventId,
    sequence: sequence as EventSequence,
    sessionId,
    ...rest,
    recordedAt: nowIso,
    occurredAt: occurredAt ?? nowIso,
  } as DurableEventEnvelope;
}

function anchorError(message: string, index: number, draft: DurableEventDraft, expected: string | null): DurableEventProjectionError {
  return new DurableEventProjectionError(message, {
    details: {
      rule: 'request_causation',
      commandIndex: index,
      type: draft.type,
      expectedCausationEventId: expected,
      causationEventId: draft.causationEventId ?? null,
    },
  });
}

function checkRequestTerminalAnchor(
  projector: DurableSessionProjector,
  draft: DurableEventDraft,
  previous: DurableEventDraft | undefined,
  index: number,
): void {
  if (!('requestId' in draft)) return;
  if (previous !== undefined && isTurnTerminalType(previous.type) && 'requestId' in previous) {
    if (previous.requestId === draft.requestId) return;
  }
  const active = projector.snapshot().activeRequest;
  // Without a matching active Request the projector rejects the draft itself.
  if (active === null || active.requestId !== draft.requestId) return;
  const boundary = active.latestBoundaryEventId;
  if (draft.causationEventId === undefined) {
    throw anchorError(
      `events[${index}] (${draft.type}) is unanchored: it must name the Request's latest boundary event ${boundary} in causationEventId`,
      index,
      draft,
      boundary,
    );
  }
  if (draft.causationEventId !== boundary) {
    throw anchorError(
      `events[${index}] (${draft.type}) names ${draft.causationEventId}, but the Request's latest boundary is ${boundary}`,
      index,
      draft,
      boundary,
    );
  }
}

/**
 * Folds `drafts` into a fork of `projector` and checks Request terminal anchors; throws
 * `DurableEventProjectionError` when the command would break an invariant. The fork is dropped.
 */
export function previewCommand(
  projector: DurableSessionProjector,
  drafts: readonly DurableEventDraft[],
  context: CommandPreviewContext,
): void {
  const fork = projector.clone();
  const base = context.head ?? 0;
  previewIdPrefix ??= `journal-preview-${crypto.randomUUID()}-`;
  const idPrefix = `${previewIdPrefix}${previewCounter++}`;
  let previous: DurableEventDraft | undefined;
  drafts.forEach((draft, index) => {
    if (isRequestTerminalType(draft.type)) checkRequestTerminalAnchor(fork, draft, previous, index);
    fork.applyParsed([syntheticEnvelope(draft, context.sessionId, base + index + 1, `${idPrefix}-${index}`, context.nowIso)]);
    previous = draft;
  });
}
