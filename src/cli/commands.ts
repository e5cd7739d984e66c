/**
 * The subcommands. Each one parses its arguments, opens its stores lazily, does its work and
 * prints text (default) or one JSON document (`--json`).
 */
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { isCheckpointStore } from '../core/checkpoint/contract.js';
import { DurableSessionJournal } from '../core/journal/journal.js';
import { DurableEventSubscription } from '../core/subscription/subscription.js';
import { durableEventCursor, decodeDurableEventCursor, encodeDurableEventCursor, type DurableEventCursor } from '../protocol/cursor.js';
import { DURABLE_EVENT_TYPES } from '../protocol/event-types.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import { describeInvalidId, type SessionId } from '../protocol/ids.js';
import { forkSession, type ForkSessionResult } from '../inspector/model/fork.js';
import { loadInspection } from '../inspector/model/inspection.js';
import { correlationOf } from '../inspector/model/timeline.js';
import { classifyRecoveryPlan } from '../inspector/model/safety.js';
import { copySession, type CopyReport } from './copy.js';
import { CliError, EXIT_DEFECT, type CliOutput } from './output.js';
import { eventLine, forkLines, inspectionLines, planLines } from './render.js';
import { openStore, parseStoreUrl, removeCreatedStore, storeExists, type OpenedStore, type StoreSpec } from './stores.js';
import { listJsonlSessions, verifyJsonlSession, verifyThroughStore, type VerifyReport } from './verify.js';

interface GlobalOptions {
  json: boolean;
  tokenEnv: string;
  /** The run's environment, where `--token-env` names the bearer token. */
  env: Readonly<Record<string, string | undefined>>;
}

/** Checks a session ID argument. */
function sessionArg(raw: string, label = 'session'): SessionId {
  const problem = describeInvalidId(raw);
  if (problem !== undefined) throw new CliError(`${label} ID ${JSON.stringify(raw.slice(0, 64))} ${problem}`);
  // SAFETY: checked with the SessionId rule just above.
  return raw as SessionId;
}

function positiveInt(raw: string, label: string, min = 1): number {
  if (!/^\d+$/.test(raw)) throw new CliError(`${label} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) throw new CliError(`${label} must be an integer >= ${min}, got ${raw}`);
  return value;
}

async function withStore<T>(raw: string, options: GlobalOptions, mustExist: boolean, body: (opened: OpenedStore) => Promise<T>): Promise<T> {
  const opened = await openStore(parseStoreUrl(raw), { mustExist, tokenEnv: options.tokenEnv, env: options.env });
  try {
    return await body(opened);
  } finally {
    await opened.close();
  }
}

/**
 * Opens the target of `copy` or `fork --to` for `body`. When `body` fails, a local store this
 * command created is removed again if none of `sessionIds` holds an event in it, so a refused copy
 * leaves no new file or empty session behind.
 */
async function withTarget<T>(
  spec: StoreSpec,
  options: GlobalOptions,
  sessionIds: readonly SessionId[],
  body: (target: OpenedStore) => Promise<T>,
): Promise<T> {
  const existed = storeExists(spec);
  const target = await openStore(spec, { mustExist: false, tokenEnv: options.tokenEnv, env: options.env });
  let created = false;
  try {
    return await body(target);
  } catch (error) {
    created = !existed && (await holdsNoEvents(target, sessionIds));
    throw error;
  } finally {
    await target.close();
    if (created) await removeCreatedStore(spec, sessionIds);
  }
}

async function holdsNoEvents(opened: OpenedStore, sessionIds: readonly SessionId[]): Promise<boolean> {
  try {
    for (const sessionId of sessionIds) if (((await opened.store.getHeadSequence(sessionId)) ?? 0) > 0) return false;
    return true;
  } catch {
    return false;
  }
}

/** Reads pages from `after` calling `visit` per event until it returns false or the log ends. */
async function scan(
  opened: OpenedStore,
  sessionId: SessionId,
  after: DurableEventCursor | undefined,
  visit: (event: DurableEventEnvelope, head: number) => boolean,
): Promise<{ last: DurableEventEnvelope | undefined; hasMore: boolean }> {
  let cursor = after;
  let last: DurableEventEnvelope | undefined;
  for (;;) {
    const page = await opened.store.read(sessionId, { ...(cursor === undefined ? {} : { after: cursor.sequence }), limit: 1000 });
    for (const [index, event] of page.events.entries()) {
      last = event;
      if (!visit(event, page.headSequence ?? event.sequence)) {
        return { last, hasMore: index < page.events.length - 1 || page.hasMore };
      }
    }
    const tail = page.events[page.events.length - 1];
    if (!page.hasMore || tail === undefined) return { last, hasMore: false };
    cursor = durableEventCursor(tail);
  }
}

async function resolveAfter(opened: OpenedStore, sessionId: SessionId, raw: string | undefined): Promise<DurableEventCursor | undefined> {
  if (raw === undefined || raw === '0') return undefined;
  if (/^\d+$/.test(raw)) {
    const sequence = positiveInt(raw, '--after');
    let found: DurableEventEnvelope | undefined;
    await scan(opened, sessionId, undefined, (event) => {
      if (event.sequence === sequence) found = event;
      return event.sequence < sequence;
    });
    if (found === undefined) throw new CliError(`--after ${sequence}: session ${sessionId} has no event ${sequence}`);
    return durableEventCursor(found);
  }
  try {
    const cursor = decodeDurableEventCursor(raw);
    if (cursor.sessionId !== sessionId) throw new CliError(`--after names a cursor of session ${cursor.sessionId}`);
    return cursor;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError('--after must be a sequence number or a cursor printed by a previous page');
  }
}

interface EventFilters {
  type?: string;
  request?: string;
  turn?: string;
  toolAttempt?: string;
  modelAttempt?: string;
}

function eventFilter(filters: EventFilters): (event: DurableEventEnvelope) => boolean {
  const types = filters.type === undefined ? undefined : new Set(filters.type.split(',').map((type) => type.trim()));
  for (const type of types ?? []) {
    if (!(DURABLE_EVENT_TYPES as readonly string[]).includes(type)) throw new CliError(`--type ${JSON.stringify(type)} is not an event type`);
  }
  return (event) =>
    (types === undefined || types.has(event.type)) &&
    (filters.request === undefined || correlationOf(event, 'requestId') === filters.request) &&
    (filters.turn === undefined || correlationOf(event, 'turnId') === filters.turn) &&
    (filters.toolAttempt === undefined || correlationOf(event, 'toolAttemptId') === filters.toolAttempt) &&
    (filters.modelAttempt === undefined || correlationOf(event, 'modelAttemptId') === filters.modelAttempt);
}

/** Registers every subcommand on `program`; they print through `out`. */
export function registerCommands(program: Command, out: CliOutput): void {
  const globals = (command: Command): GlobalOptions => ({ ...command.optsWithGlobals<Omit<GlobalOptions, 'env'>>(), env: out.io.env });

  program
    .command('inspect')
    .description('session summary: head, status, active request and turn, lease, next deadline, recovery plan')
    .argument('<store>', 'jsonl:<dir> | sqlite:<file> | postgres://... | http(s)://host')
    .argument('<session>', 'session ID')
    .option('--from-checkpoint', 'open from the stored projection checkpoint (fold only the events after it) instead of folding and auditing the whole log')
    .action(async (store: string, session: string, local: { fromCheckpoint?: boolean }, command: Command) => {
      const options = globals(command);
      const sessionId = sessionArg(session);
      await withStore(store, options, true, async (opened) => {
        const progress = out.progress(options.json);
        progress.start(0, 'reading');
        const inspection = await loadInspection(opened.store, sessionId, {
          onProgress: (read, head) => progress.update(read, head),
          ...(local.fromCheckpoint === true ? { fullFoldLimit: 0 } : {}),
        });
        progress.stop();
        if (inspection.headSequence === null) throw new CliError(`session ${sessionId} has no events in ${store}`);
        if (options.json) {
          const { timeline: _timeline, recent: _recent, ...summary } = inspection;
          out.printJson(summary);
        } else {
          for (const line of inspectionLines(inspection)) out.println(line);
        }
        if (inspection.projectionFailure !== null) {
          if (!options.json) out.warn(`the log of ${sessionId} does not project (run verify)`);
          out.exitCode = EXIT_DEFECT;
        }
      });
    });

  program
    .command('events')
    .description('one page of events, optionally filtered (repeat with --after <cursor> for the next)')
    .argument('<store>')
    .argument('<session>')
    .option('--after <seqOrCursor>', 'start after this sequence number or cursor')
    .option('--limit <n>', 'events per page (default 50)', '50')
    .option('--all', 'every matching event (no page limit)')
    .option('--type <types>', 'comma-separated event types')
    .option('--request <id>', 'only this requestId')
    .option('--turn <id>', 'only this turnId')
    .option('--tool-attempt <id>', 'only this toolAttemptId')
    .option('--model-attempt <id>', 'only this modelAttemptId')
    .action(async (store: string, session: string, flags: EventFilters & { after?: string; limit: string; all?: boolean }, command: Command) => {
      const options = globals(command);
      const sessionId = sessionArg(session);
      const limit = flags.all === true ? Number.POSITIVE_INFINITY : positiveInt(flags.limit, '--limit');
      const matches = eventFilter(flags);
      await withStore(store, options, true, async (opened) => {
        const after = await resolveAfter(opened, sessionId, flags.after);
        const progress = out.progress(options.json);
        progress.start(0, 'scanning');
        const events: DurableEventEnvelope[] = [];
        let scanned = 0;
        const { last, hasMore } = await scan(opened, sessionId, after, (event, head) => {
          scanned += 1;
          if (scanned % 500 === 0) progress.update(event.sequence, head);
          if (matches(event)) events.push(event);
          return events.length < limit;
        });
        progress.stop();
        const nextCursor = hasMore && last !== undefined ? encodeDurableEventCursor(durableEventCursor(last)) : null;
        if (options.json) {
          out.printJson({ sessionId, events, nextCursor, hasMore });
          return;
        }
        for (const event of events) out.println(eventLine(event));
        if (events.length === 0) out.println('(no matching events)');
        if (nextCursor !== null) out.println(`more: --after ${nextCursor}`);
      });
    });

  program
    .command('tail')
    .description('the last events; with -f, follow new ones live (through DurableEventSubscription)')
    .argument('<store>')
    .argument('<session>')
    .option('-f, --follow', 'keep printing events as they are appended, until the session closes or Ctrl-C')
    .option('-n, --lines <n>', 'how many past events to print first (default 10)', '10')
    .action(async (store: string, session: string, flags: { follow?: boolean; lines: string }, command: Command) => {
      const options = globals(command);
      const sessionId = sessionArg(session);
      const count = positiveInt(flags.lines, '--lines', 0);
      const print = (event: DurableEventEnvelope): void => {
        if (options.json) out.printJson(event, true);
        else out.println(eventLine(event));
      };
      await withStore(store, options, true, async (opened) => {
        const ring: DurableEventEnvelope[] = [];
        const { last } = await scan(opened, sessionId, undefined, (event) => {
          ring.push(event);
          if (ring.length > count) ring.shift();
          return true;
        });
        for (const event of ring) print(event);
        if (flags.follow !== true) return;
        const controller = new AbortController();
        const stop = (): void => controller.abort();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        // A store's own poll timer (SQLite's) does not keep the process alive; this does, until
        // the session closes or a signal arrives.
        const keepAlive = setInterval(() => undefined, 2 ** 30);
        try {
          const subscription = await DurableEventSubscription.open(opened.store, sessionId, {
            after: last === undefined ? null : durableEventCursor(last),
            signal: controller.signal,
          });
          for await (const message of subscription) {
            if (message.type === 'event') print(message.event);
          }
        } catch (error) {
          if (!controller.signal.aborted) throw error;
        } finally {
          clearInterval(keepAlive);
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
        }
      });
    });

  program
    .command('plan')
    .description('the recovery plan, each item marked safe to retry / needs reconciliation / needs a person')
    .argument('<store>')
    .argument('<session>')
    .action(async (store: string, session: string, _flags: unknown, command: Command) => {
      const options = globals(command);
      const sessionId = sessionArg(session);
      await withStore(store, options, true, async (opened) => {
        const inspection = await loadInspection(opened.store, sessionId, { recentEvents: 1 });
        if (inspection.headSequence === null) throw new CliError(`session ${sessionId} has no events in ${store}`);
        if (inspection.plan === null || inspection.projectionFailure !== null) {
          throw new CliError(`the log does not project: ${inspection.projectionFailure?.message ?? 'unknown'} (run verify)`);
        }
        const classified = classifyRecoveryPlan(inspection.plan);
        if (options.json) out.printJson({ sessionId, ...classified, plan: inspection.plan });
        else for (const line of planLines(classified)) out.println(line);
      });
    });

  program
    .command('verify')
    .description('validate whole logs and durability records; exit 2 naming the line or sequence of any defect')
    .argument('<store>')
    .argument('[session]', 'session ID (default for jsonl stores: every session in the directory)')
    .action(async (store: string, session: string | undefined, _flags: unknown, command: Command) => {
      const options = globals(command);
      const spec = parseStoreUrl(store);
      let sessions: SessionId[];
      const reports: VerifyReport[] = [];
      if (session !== undefined) sessions = [sessionArg(session)];
      else if (spec.kind === 'jsonl') {
        const listed = await listJsonlSessions(spec.location);
        sessions = listed.sessions;
        for (const { name, problem } of listed.unreadable) {
          reports.push({ sessionId: `(file ${name})`, events: 0, durabilityRecords: null, defects: [{ where: `file ${name}`, message: problem }], notes: [] });
        }
        if (sessions.length === 0 && reports.length === 0) throw new CliError(`no sessions in ${store}`);
      } else throw new CliError('verify needs a session ID for this kind of store');
      await withStore(store, options, true, async (opened) => {
        const progress = out.progress(options.json);
        for (const sessionId of sessions) {
          const report: VerifyReport = { sessionId, events: 0, durabilityRecords: null, defects: [], notes: [] };
          progress.start(0, `verify ${sessionId}`);
          const onProgress = (done: number, total?: number): void => progress.update(done, total);
          if (spec.kind === 'jsonl') await verifyJsonlSession(spec.location, sessionId, report, onProgress);
          else await verifyThroughStore(opened.store, sessionId, report, onProgress);
          progress.stop();
          reports.push(report);
        }
      });
      const defects = reports.reduce((sum, report) => sum + report.defects.length, 0);
      if (options.json) out.printJson({ ok: defects === 0, sessions: reports });
      else {
        for (const report of reports) {
          const durability = report.durabilityRecords === null ? '' : `, ${report.durabilityRecords} durability records`;
          out.println(`${report.defects.length === 0 ? 'ok     ' : 'DEFECT '} ${report.sessionId}: ${report.events} events${durability}`);
          for (const defect of report.defects) out.println(`  ${defect.where}: ${defect.message}`);
          for (const note of report.notes) out.println(`  note: ${note}`);
        }
      }
      if (defects > 0) {
        if (!options.json) out.warn(`verify found ${defects} defect(s)`);
        out.exitCode = EXIT_DEFECT;
      }
    });

  program
    .command('checkpoint')
    .description("the session's stored projection checkpoint and whether an open uses it; --rebuild replaces it with one folded from the whole log")
    .argument('<store>')
    .argument('<session>')
    .option('--rebuild', 'fold the whole log (the stored checkpoint unread) and write a new checkpoint at the head')
    .action(async (store: string, session: string, flags: { rebuild?: boolean }, command: Command) => {
      const options = globals(command);
      const sessionId = sessionArg(session);
      await withStore(store, options, true, async (opened) => {
        if (!isCheckpointStore(opened.store)) throw new CliError(`${store} keeps no projection checkpoints`);
        const checkpointStore = opened.store;
        const describe = async (): Promise<{ sequence: number; eventId: string; bytes: number } | null> => {
          const record = await checkpointStore.readCheckpoint(sessionId);
          return record === null ? null : { sequence: record.sequence, eventId: record.eventId, bytes: record.data.length };
        };
        if (flags.rebuild === true) {
          const journal = await DurableSessionJournal.open(opened.store, sessionId, { checkpoints: { read: false } });
          const head = journal.getHeadSequence();
          if (head === null) throw new CliError(`session ${sessionId} has no events in ${store}`);
          if (!(await journal.writeCheckpoint())) throw new CliError(`no checkpoint was written for session ${sessionId}`);
          const written = await describe();
          if (options.json) out.printJson({ sessionId, head, rebuilt: written });
          else out.println(`rebuilt ${sessionId}: checkpoint at sequence ${written?.sequence ?? '?'} (the head), ${written?.bytes ?? 0} bytes`);
          return;
        }
        const stored = await describe();
        // What an open does with it (the events after it are folded as usual; nothing is written).
        const journal = await DurableSessionJournal.open(opened.store, sessionId, { checkpoints: { write: false } });
        const head = journal.getHeadSequence();
        const outcome = journal.getCheckpointOutcome();
        if (options.json) out.printJson({ sessionId, head, stored, outcome });
        else {
          if (stored === null) out.println(`${sessionId}: no checkpoint stored (head ${head ?? 'none'}); an open folds the whole log`);
          else out.println(`${sessionId}: checkpoint at sequence ${stored.sequence} of ${head ?? 'none'} (${stored.bytes} bytes, event ${stored.eventId})`);
          if (outcome.status === 'used') out.println(`  an open uses it and folds ${(head ?? 0) - outcome.sequence} later event(s); \`verify\` audits it against the whole log`);
          else if (outcome.status !== 'none') out.println(`  an open does not use it (${outcome.status}: ${outcome.reason}); \`checkpoint --rebuild\` writes a new one`);
        }
      });
    });

  program
    .command('copy')
    .description('copy sessions between stores (idempotent and resumable; sequences and event IDs verified)')
    .argument('<from>', 'source store')
    .argument('<to>', 'target store (created if missing)')
    .option('-s, --session <id...>', 'session(s) to copy')
    .option('--all', 'every session of a jsonl source')
    .option('--as <id>', 'target session ID (one --session only; default: the same ID)')
    .option('--batch-size <n>', 'events per append into the target, 1..1000 (default 500)', '500')
    .action(async (from: string, to: string, flags: { session?: string[]; all?: boolean; as?: string; batchSize: string }, command: Command) => {
      const options = globals(command);
      const batchSize = positiveInt(flags.batchSize, '--batch-size');
      if (batchSize > 1000) throw new CliError('--batch-size must be at most 1000');
      const fromSpec = parseStoreUrl(from);
      const toSpec = parseStoreUrl(to);
      let sessions: SessionId[];
      if (flags.all === true) {
        if (fromSpec.kind !== 'jsonl') throw new CliError('--all lists sessions of a jsonl source only; name them with --session');
        sessions = (await listJsonlSessions(fromSpec.location)).sessions;
      } else sessions = (flags.session ?? []).map((id) => sessionArg(id));
      if (sessions.length === 0) throw new CliError('name the session(s) to copy with --session <id> (or --all for a jsonl source)');
      if (flags.as !== undefined && sessions.length !== 1) throw new CliError('--as needs exactly one --session');
      if (fromSpec.kind === toSpec.kind && fromSpec.location === toSpec.location && flags.as === undefined) {
        throw new CliError('source and target are the same store: give the copy another ID with --as');
      }
      const source = await openStore(fromSpec, { mustExist: true, tokenEnv: options.tokenEnv, env: options.env });
      try {
        // A session the source lacks (a mistyped ID) is refused before the target is touched.
        const missing: SessionId[] = [];
        for (const sessionId of sessions) if (((await source.store.getHeadSequence(sessionId)) ?? 0) === 0) missing.push(sessionId);
        if (missing.length > 0) throw new CliError(`${from} has no session ${missing.join(', ')} (no events); nothing copied`);
        const targetIds = sessions.map((sessionId) => (flags.as === undefined ? sessionId : sessionArg(flags.as, '--as')));
        const reports = await withTarget(toSpec, options, targetIds, async (target) => {
          const done: CopyReport[] = [];
          const progress = out.progress(options.json);
          for (const [index, sessionId] of sessions.entries()) {
            progress.start(0, `copy ${sessionId}`);
            try {
              done.push(await copySession(source.store, target.store, sessionId, targetIds[index] ?? sessionId, (p) => progress.update(p.done, p.total), batchSize));
            } finally {
              progress.stop();
            }
          }
          return done;
        });
        if (options.json) out.printJson({ sessions: reports });
        else {
          for (const report of reports) {
            const durability = report.durability === 'unsupported' ? 'durability records not copied (a store has no durability API)' : `durability records ${report.durability.appended} copied, ${report.durability.verified} verified`;
            out.println(`${report.sessionId} -> ${report.targetSessionId}: ${report.appendedEvents} events copied, ${report.verifiedEvents} verified, head ${report.headSequence ?? 'empty'}; ${durability}`);
          }
        }
      } finally {
        await source.close();
      }
    });

  program
    .command('fork')
    .description("new session from the first N events (session_created { source: 'fork' }); lists the tool calls a rerun would repeat")
    .argument('<store>')
    .argument('<session>')
    .requiredOption('--at <n>', 'number of events to keep (>= 1)')
    .option('--new-session <id>', 'ID of the fork (default: <session>-fork-<random>)')
    .option('--to <store>', 'write the fork into another store (default: the same one)')
    .action(async (store: string, session: string, flags: { at: string; newSession?: string; to?: string }, command: Command) => {
      const options = globals(command);
      const sessionId = sessionArg(session);
      const at = positiveInt(flags.at, '--at');
      const newSessionId = sessionArg(flags.newSession ?? `${sessionId.slice(0, 200)}-fork-${randomUUID().slice(0, 8)}`, '--new-session');
      await withStore(store, options, true, async (opened) => {
        const fork = (target: OpenedStore | undefined): Promise<ForkSessionResult> =>
          forkSession(opened.store, sessionId, { at, newSessionId, ...(target === undefined ? {} : { target: target.store }) });
        const result = flags.to === undefined ? await fork(undefined) : await withTarget(parseStoreUrl(flags.to), options, [newSessionId], fork);
        if (options.json) out.printJson(result);
        else for (const line of forkLines(result)) out.println(line);
      });
    });

  program
    .command('serve')
    .description('serve the inspector page for a local store on 127.0.0.1')
    .argument('<store>')
    .option('--port <n>', 'port (default 8790; 0 picks a free one)', '8790')
    .option('--host <host>', 'interface to bind (default 127.0.0.1)', '127.0.0.1')
    .option('--page-token-env <name>', 'environment variable with the token viewers must enter (default: a random one is printed)')
    .option('--read-only', 'no actions (the token gets the read scopes only)')
    .action(async (store: string, flags: { port: string; host: string; pageTokenEnv?: string; readOnly?: boolean }, command: Command) => {
      const options = globals(command);
      const port = positiveInt(flags.port, '--port', 0);
      const spec = parseStoreUrl(store);
      const opened = await openStore(spec, { mustExist: true, tokenEnv: options.tokenEnv, env: options.env });
      const { startInspectorServer } = await import('./serve.js');
      await startInspectorServer(opened, out, {
        port,
        host: flags.host,
        json: options.json,
        readOnly: flags.readOnly === true,
        ...(flags.pageTokenEnv === undefined ? {} : { pageTokenEnv: flags.pageTokenEnv }),
      });
    });
}
