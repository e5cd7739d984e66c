/**
 * Session benchmark: `node --import tsx bench/session.bench.ts` (or `npm run bench`).
 *
 * Two comparisons per backend (memory, JSONL, SQLite), each against a baseline measured in the
 * same run on the same store type, printed as a ratio with its target:
 * 1. one Request of a Session with a zero-latency scripted model (a Turn with one tool call, then
 *    the answer: 16 events including `session_created`) vs appending the very same batches
 *    directly (`append` with the compare-and-append precondition, one call per command, as the
 *    Session's journal commits them). Target <= 1.5x on JSONL and SQLite: the runtime's own work
 *    stays small next to persistence (on memory, where appends cost next to nothing, information). Two information lines per backend show what no Session can go below: the same
 *    commands through a bare `DurableSessionJournal`, and the model's calls plus the tool alone.
 * 2. `resumeSession` of a 10,000-event session vs reading the same 10,000 events in 1,000-event
 *    pages. Target <= 2x. Twice: with a projection checkpoint at the head, as a live Session's
 *    journal leaves the log (the journal folds from it, the message history reads the log once),
 *    and with none (the journal's projector folds all 10,000 events).
 * Each comparison alternates short slices of baseline and subject work so both see the same CPU
 * and disk conditions; the first slices warm the JIT and are not counted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { JsonlDurableEventStore, SqliteDurableEventStore } from '../src/advanced.js';
import {
  DurableSessionJournal,
  type EventId,
  MemoryDurableEventStore,
  SessionId,
  type DurableAppendOptions,
  type DurableEventDraft,
  type DurableEventEnvelope,
  type DurableEventStore,
  type EventSequence,
} from '../src/index.js';
import { commitThroughJournal, type RecordedBatches } from './journal-floor.js';
import { createScriptedModel, createSession, defineTool, resumeSession, type SessionOptions } from '../src/session.js';

const RESUME_EVENTS = 10_000;
const root = mkdtempSync(path.join(os.tmpdir(), 'session-bench-'));
let counter = 0;
const nextSession = (name: string): string => `${name}-${counter++}`;

const lookup = defineTool({ sideEffect: 'pure', execute: ({ key }: { key: string }) => ({ key, value: 42 }) });

function agent(): Pick<SessionOptions, 'model' | 'tools'> {
  return {
    model: createScriptedModel(
      ({ prompt }) =>
        prompt.some((message) => message.role === 'tool')
          ? { text: 'The value is 42.' }
          : { text: 'Looking it up.', toolCalls: [{ toolCallId: `call-${prompt.length}`, toolName: 'lookup', input: { key: 'answer' } }] },
      { chunkSize: 64 },
    ),
    tools: { lookup },
  };
}

/** A view of `store` that records every append batch (as drafts) and the event IDs it got. */
function recording(store: DurableEventStore, batches: DurableEventDraft[][], eventIds: EventId[][] = []): DurableEventStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'append') {
        return async (sessionId: SessionId, drafts: readonly DurableEventDraft[], options?: DurableAppendOptions) => {
          batches.push([...drafts]);
          const result = await target.append(sessionId, drafts, options);
          eventIds.push(result.events.map((event) => event.eventId));
          return result;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function runRequest(store: DurableEventStore): Promise<void> {
  const session = await createSession({ ...agent(), sessionId: nextSession('turn'), durableEventStore: store });
  const result = await session.run('What is the answer?');
  if (result.output !== 'The value is 42.') throw new Error(`unexpected answer ${String(result.output)}`);
}

async function appendBatches(store: DurableEventStore, batches: readonly DurableEventDraft[][]): Promise<void> {
  const sessionId = SessionId(nextSession('direct'));
  let head: EventSequence | null = null;
  for (const batch of batches) head = (await store.append(sessionId, batch, { expectedLastSequence: head })).lastSequence;
}

/** The same commands through a bare `DurableSessionJournal` on a new session (see `journal-floor.ts`). */
async function journalCommits(store: DurableEventStore, recorded: RecordedBatches): Promise<void> {
  await commitThroughJournal(await DurableSessionJournal.open(store, SessionId(nextSession('journal'))), recorded);
}

async function timed(run: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

async function interleave(slices: number, warmSlices: number, baseline: () => Promise<void>, subject: () => Promise<void>): Promise<{ baselineMs: number; subjectMs: number }> {
  let baselineMs = 0;
  let subjectMs = 0;
  for (let slice = 0; slice < slices + warmSlices; slice++) {
    const first = slice % 2 === 0;
    const a = await timed(first ? baseline : subject);
    const b = await timed(first ? subject : baseline);
    if (slice < warmSlices) continue;
    baselineMs += first ? a : b;
    subjectMs += first ? b : a;
  }
  return { baselineMs, subjectMs };
}

/**
 * The part of a Request no ledger can avoid: the scripted model's two streamed calls (read to the
 * end) and the tool's handler, with no store, journal or Session. Printed next to each Request row
 * as a floor: a Session cannot cost less than its appends plus this.
 */
async function modelAndToolOnly(): Promise<void> {
  const { model } = agent();
  const user = { role: 'user' as const, content: [{ type: 'text' as const, text: 'What is the answer?' }] };
  const prompts = [
    [user],
    [
      user,
      { role: 'assistant' as const, content: [{ type: 'tool-call' as const, toolCallId: 'call-1', toolName: 'lookup', input: '{"key":"answer"}' }] },
      {
        role: 'tool' as const,
        content: [{ type: 'tool-result' as const, toolCallId: 'call-1', toolName: 'lookup', output: { type: 'json' as const, value: { key: 'answer', value: 42 } } }],
      },
    ],
  ];
  for (const prompt of prompts) {
    const { stream } = await model.doStream({ prompt });
    const reader = stream.getReader();
    for (;;) if ((await reader.read()).done) break;
  }
  await lookup.execute({ key: 'answer' }, undefined as never);
}

interface Row {
  name: string;
  subject: string;
  baseline: string;
  ratio: number;
  target: number;
}
const rows: Row[] = [];
const notes: string[] = [];
const fmt = (value: number, digits = 0): string => value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

interface Backend {
  name: string;
  open(): DurableEventStore & { close?: () => unknown };
  requestsPerSlice: number;
  slices: number;
}

/**
 * SESSION_BENCH_SCALE multiplies every backend's slices; SESSION_BENCH_ONLY=memory,jsonl,sqlite
 * picks backends. The file stores time 120 requests per side (about 1 s): with 30 (JSONL) and 60
 * (SQLite), as until 2026-12-03, one slow flush moved a run's ratio by a tenth.
 */
const SCALE = Number(process.env['SESSION_BENCH_SCALE'] ?? 1);
const ONLY = process.env['SESSION_BENCH_ONLY']?.split(',');
const backends: Backend[] = [
  { name: 'memory', open: () => new MemoryDurableEventStore(), requestsPerSlice: 20, slices: 30 * SCALE },
  { name: 'jsonl', open: () => new JsonlDurableEventStore(path.join(root, `jsonl-${counter++}`)), requestsPerSlice: 2, slices: 60 * SCALE },
  { name: 'sqlite', open: () => new SqliteDurableEventStore(path.join(root, `sqlite-${counter++}.db`)), requestsPerSlice: 3, slices: 40 * SCALE },
].filter((backend) => ONLY === undefined || ONLY.includes(backend.name));

async function benchTurn(backend: Backend): Promise<void> {
  const store = backend.open();
  const batches: DurableEventDraft[][] = [];
  const eventIds: EventId[][] = [];
  await runRequest(recording(store, batches, eventIds));
  const events = batches.reduce((sum, batch) => sum + batch.length, 0);
  const { baselineMs, subjectMs } = await interleave(
    backend.slices,
    3,
    async () => {
      for (let i = 0; i < backend.requestsPerSlice; i++) await appendBatches(store, batches);
    },
    async () => {
      for (let i = 0; i < backend.requestsPerSlice; i++) await runRequest(store);
    },
  );
  const count = backend.slices * backend.requestsPerSlice;
  const floor = await interleave(
    backend.slices,
    3,
    async () => {
      for (let i = 0; i < backend.requestsPerSlice; i++) await appendBatches(store, batches);
    },
    async () => {
      for (let i = 0; i < backend.requestsPerSlice; i++) await modelAndToolOnly();
    },
  );
  const journal = await interleave(
    backend.slices,
    3,
    async () => {
      for (let i = 0; i < backend.requestsPerSlice; i++) await appendBatches(store, batches);
    },
    async () => {
      for (let i = 0; i < backend.requestsPerSlice; i++) await journalCommits(store, { batches, eventIds });
    },
  );
  notes.push(
    `${backend.name}: the same ${batches.length} commands through a bare DurableSessionJournal (no Session, model or tool) cost ${fmt(journal.subjectMs / count, 3)} ms/request, ${(journal.subjectMs / journal.baselineMs).toFixed(2)}x the appends`,
  );
  notes.push(
    `${backend.name}: the model's two calls and the tool alone (no ledger) cost ${fmt(floor.subjectMs / count, 3)} ms/request, ${(floor.subjectMs / floor.baselineMs).toFixed(2)}x the appends; with the journal's work, a Request on this journal cannot cost less than ${(journal.subjectMs / journal.baselineMs + floor.subjectMs / floor.baselineMs).toFixed(2)}x`,
  );
  rows.push({
    name: `${backend.name}: one Request (tool Turn + answer Turn, ${events} events in ${batches.length} commits) vs the same appends`,
    subject: `${fmt(subjectMs / count, 3)} ms/request`,
    baseline: `${fmt(baselineMs / count, 3)} ms/request`,
    ratio: subjectMs / baselineMs,
    // On the memory store the appends cost next to nothing, so the ratio measures the runtime
    // against a floor no user meets: information only (docs/performance.md, retired targets).
    target: backend.name === 'memory' ? NaN : 1.5,
  });
  await store.close?.();
}

/** Builds a session of at least RESUME_EVENTS events (whole Requests) on a memory store and returns its drafts. */
async function buildLongSession(): Promise<DurableEventDraft[]> {
  const store = new MemoryDurableEventStore();
  const sessionId = nextSession('long');
  const session = await createSession({ ...agent(), sessionId, durableEventStore: store });
  let head = 1;
  while (head < RESUME_EVENTS) {
    await session.run('What is the answer?');
    head = (await store.getHeadSequence(SessionId(sessionId))) ?? 0;
  }
  const drafts: DurableEventDraft[] = [];
  let after: EventSequence | undefined;
  for (;;) {
    const page = await store.read(SessionId(sessionId), { ...(after === undefined ? {} : { after }), limit: 1000 });
    for (const event of page.events) drafts.push(toDraft(event));
    if (!page.hasMore || page.nextCursor === null) break;
    after = page.nextCursor;
  }
  return drafts;
}

function toDraft(event: DurableEventEnvelope): DurableEventDraft {
  const { schemaVersion: _v, eventId: _e, sequence: _s, sessionId: _i, recordedAt: _r, causationEventId: _c, ...draft } = event;
  // SAFETY: an envelope minus the store-assigned fields is a draft of the same type; causation
  // links are dropped because event IDs change when the drafts are appended again.
  return draft as DurableEventDraft;
}

async function benchResume(backend: Backend, drafts: readonly DurableEventDraft[], checkpoint: boolean): Promise<void> {
  const store = backend.open();
  const sessionId = SessionId(nextSession('resume'));
  for (let index = 0; index < drafts.length; index += 1000) {
    const head = index === 0 ? null : ((await store.getHeadSequence(sessionId)) as EventSequence);
    await store.append(sessionId, drafts.slice(index, index + 1000), { expectedLastSequence: head });
  }
  // A live Session's journal writes projection checkpoints as the log grows; write one at the head
  // (or, for the other row, none at all: the fold then covers every event).
  const journal = await DurableSessionJournal.open(store, sessionId, checkpoint ? {} : { checkpoints: false });
  if (checkpoint && !(await journal.writeCheckpoint())) throw new Error(`${backend.name} did not store a checkpoint`);
  const read = async (): Promise<void> => {
    let after: EventSequence | undefined;
    let seen = 0;
    for (;;) {
      const page = await store.read(sessionId, { ...(after === undefined ? {} : { after }), limit: 1000 });
      seen += page.events.length;
      if (!page.hasMore || page.nextCursor === null) break;
      after = page.nextCursor;
    }
    if (seen !== drafts.length) throw new Error(`read ${seen} of ${drafts.length} events`);
  };
  const resume = async (): Promise<void> => {
    const session = await resumeSession({ ...agent(), sessionId, durableEventStore: store, ...(checkpoint ? {} : { checkpoints: false }) });
    if (session.resumedRequest !== null || session.history().length < drafts.length / 8) throw new Error('unexpected resume');
  };
  const slices = backend.name === 'memory' ? 20 : 8;
  const { baselineMs, subjectMs } = await interleave(slices, 2, read, resume);
  rows.push({
    name: `${backend.name}: resumeSession of ${fmt(drafts.length)} events (${checkpoint ? 'checkpoint at the head' : 'no checkpoint: full fold'}) vs reading them`,
    subject: `${fmt(subjectMs / slices, 1)} ms`,
    baseline: `${fmt(baselineMs / slices, 1)} ms`,
    ratio: subjectMs / baselineMs,
    target: 2,
  });
  await store.close?.();
}

function printTable(): boolean {
  const header = ['benchmark', 'session', 'baseline', 'ratio', 'target', 'result'];
  const informational = (row: Row): boolean => Number.isNaN(row.target);
  const body = rows.map((row) => [
    row.name,
    row.subject,
    row.baseline,
    `${row.ratio.toFixed(2)}x`,
    informational(row) ? '-' : `<= ${row.target}x`,
    informational(row) ? 'info' : row.ratio <= row.target ? 'PASS' : 'MISS',
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...body.map((cells) => (cells[column] ?? '').length)));
  const render = (cells: string[]): string => cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ');
  console.log(render(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const cells of body) console.log(render(cells));
  return rows.every((row) => informational(row) || row.ratio <= row.target);
}

const started = performance.now();
try {
  console.log(`Session benchmark (${os.platform()} ${os.arch()}, node ${process.version}, dir ${root})`);
  // SESSION_BENCH=resume runs only the resume comparisons, SESSION_BENCH=request only the Request ones.
  const only = process.env['SESSION_BENCH'];
  if (only !== 'resume') for (const backend of backends) await benchTurn(backend);
  const drafts = only === 'request' ? [] : await buildLongSession();
  for (const backend of only === 'request' ? [] : backends) {
    await benchResume(backend, drafts, true);
    await benchResume(backend, drafts, false);
  }
  console.log('');
  const allPass = printTable();
  for (const note of notes) console.log(`information: ${note}`);
  console.log(`\n${allPass ? 'all targets met' : 'some targets missed'} in ${fmt((performance.now() - started) / 1000, 1)} s`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
