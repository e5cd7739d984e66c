/**
 * The timeline: start and end events paired into bars with durations.
 *
 * Lanes: Requests (`request_accepted` -> terminal), Turns (`turn_started` -> completed/aborted),
 * model attempts (`model_request_started` -> terminal), tool attempts (`tool_scheduled` ->
 * terminal, with the moment `tool_started` crossed the execution boundary), permissions
 * (`permission_requested` -> `permission_resolved`), and, from the durability records, steps
 * (a point: a step is recorded once it completed), sleeps (recorded -> `untilMs`) and waits
 * (recorded -> the delivery or the timeout). A bar whose end has not happened is `open` and
 * stretches to `nowMs`. Times are `occurredAt` (domain time) for events and `recordedAt` for
 * durability records.
 */
import type { DurabilityRecord } from '../../core/durability/record-contract.js';
import type { DurableEventEnvelope } from '../../protocol/events.js';

/** Most bars the inspector page draws (the latest ones), and what an inspection keeps. */
export const MAX_TIMELINE_BARS = 400;

/** The lanes of the timeline, top to bottom. */
export type TimelineLane = 'request' | 'turn' | 'model' | 'tool' | 'permission' | 'step' | 'sleep' | 'wait';

/** One bar. */
export interface TimelineBar {
  lane: TimelineLane;
  /** The attempt, Request, Turn or durability key it stands for. */
  id: string;
  label: string;
  startMs: number;
  /** `null` while open. */
  endMs: number | null;
  /** The terminal event type or durability outcome; `open` while it has none. */
  status: string;
  startSequence?: number;
  endSequence?: number;
  /** When a tool crossed its execution boundary. */
  markMs?: number;
}

/** The timeline of one session. */
export interface Timeline {
  /** The bars, in the order they started (the latest ones only, when built with a bound). */
  bars: TimelineBar[];
  /** Every bar of the session, including those not kept in `bars`. */
  total: number;
  /** Earliest start and latest end (or start) over every bar, kept or not. */
  startMs: number | null;
  endMs: number | null;
}

/** Correlation ID fields an envelope may carry. */
export type CorrelationKey = 'requestId' | 'turnId' | 'modelAttemptId' | 'toolAttemptId' | 'commandId';

/** The correlation ID `key` of `event`, if the event type carries it. */
export function correlationOf(event: DurableEventEnvelope, key: CorrelationKey): string | undefined {
  const value = (event as unknown as Record<string, unknown>)[key];
  return typeof value === 'string' ? value : undefined;
}

const TERMINALS: Record<string, { lane: TimelineLane; key: CorrelationKey }> = {
  request_completed: { lane: 'request', key: 'requestId' },
  request_failed: { lane: 'request', key: 'requestId' },
  request_interrupted: { lane: 'request', key: 'requestId' },
  turn_completed: { lane: 'turn', key: 'turnId' },
  turn_aborted: { lane: 'turn', key: 'turnId' },
  model_request_completed: { lane: 'model', key: 'modelAttemptId' },
  model_request_failed: { lane: 'model', key: 'modelAttemptId' },
  model_request_aborted: { lane: 'model', key: 'modelAttemptId' },
  tool_completed: { lane: 'tool', key: 'toolAttemptId' },
  tool_failed: { lane: 'tool', key: 'toolAttemptId' },
  tool_cancelled: { lane: 'tool', key: 'toolAttemptId' },
  tool_outcome_unknown: { lane: 'tool', key: 'toolAttemptId' },
};

/** Parses a mounted tool's scope (`["runId","toolName","toolCallId"]`) or a plain run ID. */
function runOfScope(scope: string): string {
  if (scope.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(scope);
      if (Array.isArray(parsed) && typeof parsed[0] === 'string') return parsed[0];
    } catch {
      // Not a tuple: the scope is the run ID itself.
    }
  }
  return scope;
}

/** Duration in ms of a bar (open bars up to `nowMs`). */
export function barDurationMs(bar: TimelineBar, nowMs: number): number {
  return Math.max(0, (bar.endMs ?? nowMs) - bar.startMs);
}

/** Human form of a duration: `850 ms`, `12.3 s`, `4 min 2 s`, `3 h 20 min`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
}

/**
 * Builds a timeline incrementally, page by page, keeping at most `keepBars` bars (the latest by
 * start; `Infinity` keeps all): an inspection of a long session holds the bars the page draws
 * and the bars still open, never one per attempt of the whole log. Bars are numbered in the order
 * they start (events first, then durability records, as {@link buildTimeline} lists them); `total`
 * counts every bar, kept or not, and `startMs` / `endMs` span them all.
 */
export class TimelineBuilder {
  /** The kept bars: the latest `keepBars`, oldest first (a ring once full). */
  readonly #ring: TimelineBar[] = [];
  #next = 0;
  #total = 0;
  readonly #open = new Map<string, TimelineBar>();
  readonly #waits = new Map<string, TimelineBar>();
  #startMs: number | null = null;
  #endMs: number | null = null;

  constructor(private readonly keepBars = Number.POSITIVE_INFINITY) {
    if (!(keepBars >= 1)) throw new RangeError('keepBars must be at least 1');
  }

  #add(bar: TimelineBar): void {
    this.#total += 1;
    this.#startMs = this.#startMs === null ? bar.startMs : Math.min(this.#startMs, bar.startMs);
    this.#stretch(bar.endMs ?? bar.startMs);
    if (this.#ring.length < this.keepBars) {
      this.#ring.push(bar);
      return;
    }
    this.#ring[this.#next] = bar;
    this.#next = (this.#next + 1) % this.#ring.length;
  }

  #stretch(atMs: number): void {
    this.#endMs = this.#endMs === null ? atMs : Math.max(this.#endMs, atMs);
  }

  #begin(bar: TimelineBar): void {
    this.#add(bar);
    this.#open.set(`${bar.lane}:${bar.id}`, bar);
  }

  #end(lane: TimelineLane, id: string | undefined, atMs: number, status: string, sequence?: number): void {
    if (id === undefined) return;
    const bar = this.#open.get(`${lane}:${id}`);
    if (bar === undefined) return;
    bar.endMs = atMs;
    bar.status = status;
    if (sequence !== undefined) bar.endSequence = sequence;
    this.#stretch(atMs);
    this.#open.delete(`${lane}:${id}`);
  }

  /** Adds the next events of the log, in order. */
  addEvents(events: readonly DurableEventEnvelope[]): void {
    for (const event of events) {
      const at = Date.parse(event.occurredAt);
      const seq = event.sequence;
      switch (event.type) {
        case 'request_accepted':
          this.#begin({ lane: 'request', id: event.requestId, label: `request ${event.requestId}`, startMs: at, endMs: null, status: 'open', startSequence: seq });
          break;
        case 'turn_started':
          this.#begin({ lane: 'turn', id: event.turnId, label: `turn ${event.data.turn}`, startMs: at, endMs: null, status: 'open', startSequence: seq });
          break;
        case 'model_request_started':
          this.#begin({ lane: 'model', id: event.modelAttemptId, label: `model ${event.data.model}`, startMs: at, endMs: null, status: 'open', startSequence: seq });
          break;
        case 'tool_scheduled':
          this.#begin({
            lane: 'tool',
            id: event.toolAttemptId,
            label: `${event.data.toolName} (${event.data.sideEffect})`,
            startMs: at,
            endMs: null,
            status: 'open',
            startSequence: seq,
          });
          break;
        case 'tool_started': {
          const bar = this.#open.get(`tool:${event.toolAttemptId}`);
          if (bar !== undefined) bar.markMs = at;
          break;
        }
        case 'permission_requested':
          this.#begin({
            lane: 'permission',
            id: event.data.permissionRequestId,
            label: `permission ${event.data.toolName}`,
            startMs: at,
            endMs: null,
            status: 'open',
            startSequence: seq,
          });
          break;
        case 'permission_resolved':
          this.#end('permission', event.data.permissionRequestId, at, event.data.decision, seq);
          break;
        default: {
          const terminal = TERMINALS[event.type];
          if (terminal !== undefined) this.#end(terminal.lane, correlationOf(event, terminal.key), at, event.type, seq);
        }
      }
    }
  }

  /** Adds the session's durability records (after its events), in record order. */
  addRecords(records: readonly DurabilityRecord[]): void {
    for (const record of records) {
      const at = Date.parse(record.recordedAt);
      switch (record.kind) {
        case 'step':
          this.#add({ lane: 'step', id: `${record.scope}/${record.key}`, label: `step ${record.key}`, startMs: at, endMs: at, status: 'completed' });
          break;
        case 'sleep':
          this.#add({ lane: 'sleep', id: `${record.scope}/${record.key}`, label: `sleep ${record.key}`, startMs: at, endMs: record.untilMs, status: 'until' });
          break;
        case 'wait': {
          const bar: TimelineBar = { lane: 'wait', id: `${record.scope}/${record.key}`, label: `wait ${record.key}`, startMs: at, endMs: null, status: 'open' };
          this.#add(bar);
          this.#waits.set(`${runOfScope(record.scope)}\u0000${record.key}`, bar);
          break;
        }
        case 'wait_timeout': {
          const bar = this.#waits.get(`${runOfScope(record.scope)}\u0000${record.key}`);
          if (bar !== undefined && bar.endMs === null) {
            bar.endMs = at;
            bar.status = 'timed_out';
            this.#stretch(at);
          }
          break;
        }
        case 'delivery': {
          const bar = this.#waits.get(`${record.runId}\u0000${record.key}`);
          if (bar !== undefined && bar.endMs === null) {
            bar.endMs = at;
            bar.status = 'delivered';
            this.#stretch(at);
          }
          break;
        }
        case 'run_event':
          break;
      }
    }
  }

  /** The timeline so far: the kept bars, oldest first. */
  finish(): Timeline {
    const bars = this.#next === 0 ? [...this.#ring] : [...this.#ring.slice(this.#next), ...this.#ring.slice(0, this.#next)];
    return { bars, total: this.#total, startMs: this.#startMs, endMs: this.#endMs };
  }
}

/**
 * Pairs the events and durability records of a session into bars (all of them; an inspection uses
 * {@link TimelineBuilder} with a bound).
 *
 * @example
 * const { bars } = buildTimeline(events, records);
 */
export function buildTimeline(events: readonly DurableEventEnvelope[], records: readonly DurabilityRecord[] = []): Timeline {
  const builder = new TimelineBuilder();
  builder.addEvents(events);
  builder.addRecords(records);
  return builder.finish();
}

/** A durability deadline still ahead of the session: a sleep's end or a pending wait's timeout. */
export interface PendingDeadline {
  kind: 'sleep' | 'wait';
  scope: string;
  key: string;
  atMs: number;
}

/**
 * The earliest deadline the durability records still waits for (what the edge's alarm is set to),
 * or `null`. A sleep counts while `untilMs >= nowMs - graceMs` (a sleep just past its end may not
 * have resumed yet); a wait counts until it is delivered or timed out.
 */
export function nextDeadline(records: readonly DurabilityRecord[], nowMs: number, graceMs = 60_000): PendingDeadline | null {
  const settled = new Set<string>();
  for (const record of records) {
    if (record.kind === 'wait_timeout') settled.add(`${runOfScope(record.scope)}\u0000${record.key}`);
    if (record.kind === 'delivery') settled.add(`${record.runId}\u0000${record.key}`);
  }
  let best: PendingDeadline | null = null;
  for (const record of records) {
    let candidate: PendingDeadline | null = null;
    if (record.kind === 'sleep' && record.untilMs >= nowMs - graceMs) {
      candidate = { kind: 'sleep', scope: record.scope, key: record.key, atMs: record.untilMs };
    }
    if (record.kind === 'wait' && record.deadlineMs !== null && !settled.has(`${runOfScope(record.scope)}\u0000${record.key}`)) {
      candidate = { kind: 'wait', scope: record.scope, key: record.key, atMs: record.deadlineMs };
    }
    if (candidate !== null && (best === null || candidate.atMs < best.atMs)) best = candidate;
  }
  return best;
}

/** Pending waits (no delivery, no timeout yet): what "deliver an awaited event" can answer. */
export function pendingWaits(records: readonly DurabilityRecord[]): { runId: string; key: string; scope: string; deadlineMs: number | null }[] {
  const settled = new Set<string>();
  for (const record of records) {
    if (record.kind === 'wait_timeout') settled.add(`${runOfScope(record.scope)}\u0000${record.key}`);
    if (record.kind === 'delivery') settled.add(`${record.runId}\u0000${record.key}`);
  }
  const out: { runId: string; key: string; scope: string; deadlineMs: number | null }[] = [];
  for (const record of records) {
    if (record.kind !== 'wait') continue;
    const runId = runOfScope(record.scope);
    if (!settled.has(`${runId}\u0000${record.key}`)) out.push({ runId, key: record.key, scope: record.scope, deadlineMs: record.deadlineMs });
  }
  return out;
}
