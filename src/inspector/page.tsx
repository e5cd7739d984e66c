/** @jsxRuntime automatic */
/** @jsxImportSource hono/jsx */
/**
 * The inspector page, server-rendered with Hono's JSX.
 *
 * Everything a viewer needs is in the HTML: header, plan with safety, timeline (SVG: bars are
 * `<rect>` attributes, so no inline style is needed under `style-src 'self'`), the event list
 * with each payload in a `<details>`, page links, and the action forms the viewer's scopes allow.
 * The only script (`/inspector/assets/inspector.js`) adds the live tail and posts the actions.
 */
import type { FC } from 'hono/jsx';
import type { DurableEventEnvelope } from '../protocol/events.js';
import type { InspectorScope } from './backend.js';
import { describeCheckpoint, type Inspection } from './model/inspection.js';
import { safetyLabel, type PlanItem } from './model/safety.js';
import { barDurationMs, formatDuration, MAX_TIMELINE_BARS, type TimelineBar, type TimelineLane } from './model/timeline.js';

/** Where the page's static assets are served. */
export const ASSET_PREFIX = '/inspector/assets';
/** Events per page of the event list. */
export const EVENTS_PER_PAGE = 100;

const LANES: readonly TimelineLane[] = ['request', 'turn', 'model', 'tool', 'permission', 'step', 'sleep', 'wait'];

const Layout: FC<{ title: string; children?: unknown }> = ({ title, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="referrer" content="no-referrer" />
      <title>{title}</title>
      <link rel="stylesheet" href={`${ASSET_PREFIX}/inspector.css`} />
      <script src={`${ASSET_PREFIX}/inspector.js`} defer></script>
    </head>
    <body>{children}</body>
  </html>
);

/** The sign-in form: the token is posted once and kept in an HttpOnly cookie, never in a URL. */
export const LoginPage: FC<{ sessionId: string; loginUrl: string; error?: string }> = ({ sessionId, loginUrl, error }) => (
  <Layout title={`Sign in · ${sessionId}`}>
    <main class="login">
      <h1>Inspect {sessionId}</h1>
      {error === undefined ? null : <p class="error" role="alert">{error}</p>}
      <form method="post" action={loginUrl} autocomplete="off">
        <label>
          Token <input type="password" name="token" id="token" required autofocus />
        </label>
        <button type="submit" id="sign-in">Open</button>
      </form>
      <p class="hint">The token is sent once in this form and kept in an HttpOnly cookie for this session's page only.</p>
    </main>
  </Layout>
);

function iso(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '—' : new Date(ms).toISOString();
}

const Badge: FC<{ safety: PlanItem['safety'] }> = ({ safety }) => <span class={`badge ${safety}`}>{safetyLabel(safety)}</span>;

const PlanItemView: FC<{ item: PlanItem; scopes: ReadonlySet<InspectorScope> }> = ({ item, scopes }) => {
  const canRecover = scopes.has('recover');
  return (
    <li class={`plan-item ${item.safety}`} data-kind={item.kind}>
      <Badge safety={item.safety} /> <span class="summary">{item.summary}</span>
      {item.kind === 'permission' && item.input !== undefined ? (
        <details>
          <summary>input</summary>
          <pre>{JSON.stringify(item.input, null, 2)}</pre>
        </details>
      ) : null}
      {item.kind === 'permission' && canRecover ? (
        <span class="actions">
          {(['allow', 'deny'] as const).map((decision) => (
            <button
              type="button"
              class={`act ${decision}`}
              data-action="resolve-permission"
              data-permission-request-id={item.permissionRequestId}
              data-decision={decision}
            >
              {decision === 'allow' ? 'Allow' : 'Deny'}
            </button>
          ))}
        </span>
      ) : null}
      {item.kind === 'tool_unknown' && canRecover ? (
        <form class="act-form" data-action="reconcile-tool-outcome" data-tool-attempt-id={item.toolAttemptId}>
          <select name="status">
            <option value="completed">completed</option>
            <option value="failed">failed</option>
            <option value="cancelled">cancelled</option>
          </select>
          <textarea name="value" rows={2} placeholder='result JSON, or {"code":"…","message":"…"} for failed'></textarea>
          <button type="submit">Record outcome</button>
        </form>
      ) : null}
      {item.kind === 'model_attempt' && canRecover ? (
        <form
          class="act-form"
          data-action="reconcile-model-outcome"
          data-request-id={item.requestId}
          data-turn-id={item.turnId}
          data-model-attempt-id={item.modelAttemptId}
        >
          <select name="status">
            <option value="aborted">aborted</option>
            <option value="failed">failed</option>
            <option value="completed">completed</option>
          </select>
          <textarea name="value" rows={2} placeholder='response JSON for completed, {"code":"…","message":"…"} for failed'></textarea>
          <button type="submit">Record outcome</button>
        </form>
      ) : null}
    </li>
  );
};

/** Packs bars of one lane into rows so that overlapping bars do not cover each other. */
function packLane(bars: readonly TimelineBar[], nowMs: number): TimelineBar[][] {
  const rows: { end: number; bars: TimelineBar[] }[] = [];
  for (const bar of bars) {
    const end = bar.endMs ?? nowMs;
    const row = rows.find((candidate) => candidate.end <= bar.startMs);
    if (row === undefined) rows.push({ end, bars: [bar] });
    else {
      row.end = end;
      row.bars.push(bar);
    }
  }
  return rows.map((row) => row.bars);
}

const TimelineView: FC<{ inspection: Inspection }> = ({ inspection }) => {
  const all = inspection.timeline.bars;
  const bars = all.length > MAX_TIMELINE_BARS ? all.slice(all.length - MAX_TIMELINE_BARS) : all;
  if (bars.length === 0) return <p class="empty">nothing to draw yet</p>;
  const now = inspection.nowMs;
  const t0 = Math.min(...bars.map((bar) => bar.startMs));
  // Future deadlines (a sleep until tomorrow) would squash everything else: draw up to now and
  // mark such bars as still running; their titles keep the real end.
  const visibleEnd = (bar: TimelineBar): number => Math.max(bar.startMs, Math.min(bar.endMs ?? now, now));
  const t1 = Math.max(t0 + 1, ...bars.map(visibleEnd));
  const width = 1000;
  const label = 110;
  const rowHeight = 16;
  const scale = (ms: number): number => label + ((ms - t0) / (t1 - t0)) * (width - label - 10);
  const rows: { lane: TimelineLane; bars: TimelineBar[] }[] = [];
  for (const lane of LANES) {
    const laneBars = bars.filter((bar) => bar.lane === lane);
    for (const row of packLane(laneBars, now)) rows.push({ lane, bars: row });
  }
  const height = rows.length * rowHeight + 24;
  return (
    <div class="timeline-wrap">
      {inspection.timeline.total > bars.length ? <p class="note">showing the latest {bars.length} of {inspection.timeline.total} bars</p> : null}
      {inspection.timelineFrom > 1 ? (
        <p class="note" id="timeline-from">
          bars begun from sequence {inspection.timelineFrom} on (this view opened from the projection checkpoint)
        </p>
      ) : null}
      <svg id="timeline" viewBox={`0 0 ${width} ${height}`} width="100%" height={height} role="img" aria-label="timeline">
        {rows.map((row, index) => (
          <g class={`lane ${row.lane}`}>
            <text x={4} y={index * rowHeight + 12} class="lane-label">
              {index === 0 || rows[index - 1]?.lane !== row.lane ? row.lane : ''}
            </text>
            {row.bars.map((bar) => {
              const x = scale(bar.startMs);
              const w = Math.max(2, scale(visibleEnd(bar)) - x);
              const running = bar.endMs === null || bar.endMs > now;
              const duration = `${formatDuration(barDurationMs(bar, now))}${bar.endMs !== null && bar.endMs > now ? `, until ${new Date(bar.endMs).toISOString()}` : ''}`;
              return (
                <rect
                  x={x.toFixed(1)}
                  y={index * rowHeight + 2}
                  width={w.toFixed(1)}
                  height={rowHeight - 4}
                  class={`bar ${bar.lane} ${running ? 'open' : ''} ${bar.status}`}
                  data-id={bar.id}
                >
                  <title>{`${bar.label}: ${bar.status}, ${duration}${bar.startSequence === undefined ? '' : ` (events ${bar.startSequence}–${bar.endSequence ?? '…'})`}`}</title>
                </rect>
              );
            })}
          </g>
        ))}
        <text x={label} y={height - 6} class="axis">{new Date(t0).toISOString()}</text>
        <text x={width - 10} y={height - 6} class="axis end">{`+${formatDuration(t1 - t0)}`}</text>
      </svg>
    </div>
  );
};

/** One event row (also rendered for live-tail rows by the server's SSE route). */
export const EventRow: FC<{ event: DurableEventEnvelope }> = ({ event }) => {
  const ids = (['requestId', 'turnId', 'modelAttemptId', 'toolAttemptId'] as const)
    .map((key) => event[key as keyof DurableEventEnvelope])
    .filter((value): value is string => typeof value === 'string');
  return (
    <tr class={`event ${event.type}`} data-sequence={event.sequence}>
      <td class="seq">{event.sequence}</td>
      <td class="time">{event.occurredAt}</td>
      <td class="type">{event.type}</td>
      <td class="ids">{ids.join(' · ')}</td>
      <td class="payload">
        <details>
          <summary>data</summary>
          <pre>{JSON.stringify(event, null, 2)}</pre>
        </details>
      </td>
    </tr>
  );
};

/** Props of {@link InspectorPage}. */
interface InspectorPageProps {
  inspection: Inspection;
  scopes: ReadonlySet<InspectorScope>;
  basePath: string;
  /** First sequence of the shown page, or `undefined` for the latest events. */
  listFrom?: number;
}

/** The whole page. */
export const InspectorPage: FC<InspectorPageProps> = ({ inspection, scopes, basePath, listFrom }) => {
  const projection = inspection.projection;
  const lease = inspection.lease;
  const head = inspection.headSequence ?? 0;
  const first = inspection.recent[0]?.sequence ?? 1;
  const last = inspection.recent[inspection.recent.length - 1]?.sequence ?? 0;
  const pageLink = (from: number): string => `${basePath}?from=${from}`;
  const status = inspection.projectionFailure !== null ? 'projection failed' : (projection?.status ?? 'empty');
  return (
    <Layout title={`${inspection.sessionId} · agent-ledger inspector`}>
      <main
        id="inspector"
        data-session={inspection.sessionId}
        data-base={basePath}
        data-after={inspection.headCursor ?? ''}
        data-scopes={[...scopes].join(' ')}
      >
        <header id="summary">
          <h1>{inspection.sessionId}</h1>
          <dl>
            <dt>status</dt>
            <dd id="status" class={`status ${status.replace(/ /g, '-')}`}>{status}</dd>
            <dt>head</dt>
            <dd id="head">{inspection.headSequence ?? 'empty'}</dd>
            <dt>active</dt>
            <dd>
              {projection?.activeRequest === null || projection === null
                ? 'no request'
                : `request ${projection.activeRequest.requestId} (${projection.activeRequest.status})${projection.activeRequest.activeTurn === null ? '' : `, turn ${projection.activeRequest.activeTurn.turn}`}`}
            </dd>
            <dt>lease</dt>
            <dd id="lease">
              {!inspection.leaseSupported
                ? 'n/a'
                : lease === null
                  ? 'never held'
                  : `${lease.ownerId}, token ${lease.fencingToken}, ${lease.released ? 'released' : lease.active ? `until ${iso(lease.expiresAtMs)}` : 'expired'}`}
            </dd>
            <dt>next alarm</dt>
            <dd id="next-alarm">
              {inspection.nextDeadline === null ? 'none' : `${inspection.nextDeadline.kind} ${inspection.nextDeadline.key} at ${iso(inspection.nextDeadline.atMs)}`}
            </dd>
            <dt>checkpoint</dt>
            <dd id="checkpoint" data-status={inspection.checkpoint?.status ?? 'none'}>
              {describeCheckpoint(inspection)}
              {inspection.openedFrom === 'checkpoint' ? (
                <>
                  {' '}
                  <a id="whole-log" href={`${basePath}?full=1`}>
                    fold the whole log and audit it
                  </a>
                </>
              ) : null}
            </dd>
          </dl>
          <form method="post" action={`${basePath}/logout`} class="logout">
            <button type="submit">Sign out</button>
          </form>
        </header>
        <p id="action-status" role="status" aria-live="polite"></p>
        {inspection.checkpoint?.status !== 'wrong' ? null : (
          <p class="error" role="alert" id="checkpoint-defects">
            The stored projection checkpoint differs from the log, and opens of this session use it:{' '}
            {inspection.checkpoint.defects.join(' ')} Rebuild it with{' '}
            <code>{`agent-ledger checkpoint <store> ${inspection.sessionId} --rebuild`}</code>.
          </p>
        )}
        {inspection.projectionFailure === null ? null : (
          <p class="error" role="alert">
            The log breaks the projector's invariants: {inspection.projectionFailure.message}
          </p>
        )}
        <section id="plan">
          <h2>Recovery plan</h2>
          {inspection.classified === null ? (
            <p>no plan (the log does not project)</p>
          ) : (
            <>
              <p class="plan-action">
                <code>{inspection.classified.action}</code> — {inspection.classified.reason}
              </p>
              {inspection.classified.items.length === 0 ? (
                <p class="empty">nothing to do</p>
              ) : (
                <ul class="plan-items">
                  {inspection.classified.items.map((item) => (
                    <PlanItemView item={item} scopes={scopes} />
                  ))}
                </ul>
              )}
            </>
          )}
          {inspection.pendingWaits.length === 0 ? null : (
            <div id="waits">
              <h3>Awaited events</h3>
              <ul>
                {inspection.pendingWaits.map((wait) => (
                  <li>
                    <span class="badge needs_person">awaited</span> run <code>{wait.runId}</code> waits for <code>{wait.key}</code>
                    {wait.deadlineMs === null ? '' : ` until ${iso(wait.deadlineMs)}`}
                    {scopes.has('deliver') ? (
                      <form class="act-form" data-action="deliver" data-run-id={wait.runId} data-key={wait.key}>
                        <textarea name="value" rows={2} placeholder="payload JSON"></textarea>
                        <button type="submit">Deliver</button>
                      </form>
                    ) : null}
                  </li>
                ))}
              </ul>
            </div>
          )}
        </section>
        <section id="timeline-section">
          <h2>Timeline</h2>
          <TimelineView inspection={inspection} />
        </section>
        <section id="tail-section">
          <h2>
            Live tail <span id="tail-state" class="tail-state">connecting…</span>
          </h2>
          <table id="tail" class="events">
            <tbody></tbody>
          </table>
        </section>
        <section id="events-section">
          <h2>
            Events {first}–{last} of {head}
          </h2>
          <nav class="pager">
            {first > 1 ? <a href={pageLink(1)}>first</a> : null}
            {first > 1 ? <a href={pageLink(Math.max(1, first - EVENTS_PER_PAGE))}>older</a> : null}
            {last < head ? <a href={pageLink(last + 1)}>newer</a> : null}
            {listFrom !== undefined ? <a href={basePath}>latest</a> : null}
          </nav>
          <table id="events" class="events">
            <thead>
              <tr>
                <th>#</th>
                <th>occurred</th>
                <th>type</th>
                <th>ids</th>
                <th>payload</th>
              </tr>
            </thead>
            <tbody>
              {inspection.recent.map((event) => (
                <EventRow event={event} />
              ))}
            </tbody>
          </table>
        </section>
        {scopes.has('fork') && head > 0 ? (
          <section id="fork">
            <h2>Fork</h2>
            <form class="act-form" data-action="fork">
              <label>
                keep the first <input type="number" name="at" min="1" max={head} value={String(head)} /> events
              </label>
              <label>
                as <input type="text" name="newSessionId" placeholder={`${inspection.sessionId}-fork`} required />
              </label>
              <button type="submit">Fork</button>
            </form>
          </section>
        ) : null}
      </main>
    </Layout>
  );
};
