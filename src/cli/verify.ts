/**
 * `verify`: checks a whole session log and its durability records, naming every defect's place.
 *
 * Two passes:
 * 1. For a JSONL store, the files themselves, through the store's own reader and line rules
 *    (`LineFile` opened read-only, `checkLogLine`, `checkDurabilityLine`), but every line however
 *    many are bad (the store stops at the first): every line valid UTF-8 and a JSON array of
 *    valid v4 envelopes of this session, sequences contiguous from 1, event IDs unique; the
 *    durability file one valid record per line, sequences contiguous, identities unique. A last line
 *    without its newline is a torn tail, which readers ignore and the next writer truncates:
 *    reported as a note, not a defect. A line is named by the byte offset where it starts, as the
 *    store's own errors (and so `inspect`) name it: `log line at byte 1234`. Pass 2 of a JSONL
 *    store reads through a store opened `readOnly`: `verify` never creates, writes, truncates or
 *    repairs a file.
 * 2. For every store, the log as the store serves it, page by page, through the projector (all
 *    21 invariants; a violation names its sequence and rule), and the durability records through
 *    `readDurability`.
 * The first projector violation stops pass 2 (a failed projector stays failed); pass 1 keeps
 * going, so one run lists every malformed line.
 * Pass 2 also audits the session's stored projection checkpoint, when the store keeps one, at its
 * sequence (`core/checkpoint/audit.ts`): a checkpoint an open would trust but whose digest, fold
 * state, command index or ID filter differs from the fold is a defect; one an open would discard
 * is a note. On a store that keeps per-event digests (`DurableEventDigestStore`: SQLite, Durable
 * Object storage, PostgreSQL), pass 2 recomputes each served event's digest and compares it with
 * the one stored with its row: a difference is a defect at that sequence, wherever the checkpoint
 * stands. Rows written before the store kept digests (a prefix of the log) are a note; a row
 * without a digest after one with a digest was written around the store (or by an older release
 * still writing after the migration), a defect.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { CheckpointAudit, type CheckpointAuditResult } from '../core/checkpoint/audit.js';
import { eventDigest, isEventDigestStore, type DurableEventDigestStore } from '../core/checkpoint/event-digest.js';
import { DurableSessionProjector } from '../core/projector/projector.js';
import type { DurableEventStore } from '../core/store.js';
import { DurableEventStoreError, isDurableError } from '../protocol/errors.js';
import type { DurableEventEnvelope } from '../protocol/events.js';
import { describeInvalidId, type SessionId } from '../protocol/ids.js';
import { checkDurabilityLine } from '../adapters/node/jsonl/durability-file.js';
import { LineFile } from '../adapters/node/jsonl/line-file.js';
import { checkLogLine, type LogLineProblem } from '../adapters/node/jsonl/session-file.js';
import { EVENTS_DIRECTORY, logFileStem, sessionFileStem, sessionPaths } from '../adapters/node/jsonl/session-paths.js';
import { readDurabilityRecords } from '../inspector/model/inspection.js';

/** One defect, with where it is. */
interface VerifyDefect {
  /** `log line at byte 1234`, `sequence 12`, `durability line at byte 56`, `checkpoint at sequence 4096`, `store`. */
  where: string;
  message: string;
  /** Byte offset of the JSONL line the defect is in. */
  offset?: number;
  sequence?: number;
}

/** What `verify` found for one session. */
export interface VerifyReport {
  sessionId: string;
  events: number;
  /** Lines of the JSONL log (append batches), when checked. */
  lines?: number;
  durabilityRecords: number | null;
  defects: VerifyDefect[];
  notes: string[];
  /** The audit of the stored projection checkpoint (absent when the store keeps none). */
  checkpoint?: { sequence: number; status: CheckpointAuditResult['status'] };
  /**
   * Per-event digests (absent when the store keeps none): events whose stored digest was
   * compared, and events whose row has none.
   */
  eventDigests?: { checked: number; missing: number };
}

/** Compares each served event with the digest stored with its row (pass 2, page by page). */
class EventDigestCheck {
  checked = 0;
  /** First and last event of the leading run of rows without a digest. */
  missingFrom = 0;
  missingTo = 0;
  #firstChecked = 0;
  #lastChecked = 0;
  #mismatches = 0;

  constructor(
    readonly store: DurableEventDigestStore,
    readonly sessionId: SessionId,
  ) {}

  /** Checks `events` (one page, contiguous), adding defects to `report`. */
  async page(events: readonly DurableEventEnvelope[], report: VerifyReport): Promise<void> {
    const first = events[0];
    if (first === undefined) return;
    const rows = await this.store.readEventDigests(this.sessionId, { after: first.sequence - 1, limit: events.length });
    const stored = new Map(rows.map((row) => [row.sequence, row.digest]));
    for (const event of events) {
      const digest = stored.get(event.sequence) ?? null;
      const where = `sequence ${event.sequence}`;
      if (digest === null) {
        if (this.checked > 0) {
          report.defects.push({
            where,
            sequence: event.sequence,
            message: `the row has no stored digest, though earlier rows have one: it was written around the store, its digest was removed, or an older release still wrote to the migrated database`,
          });
        } else {
          if (this.missingFrom === 0) this.missingFrom = event.sequence;
          this.missingTo = event.sequence;
        }
        continue;
      }
      if (this.#firstChecked === 0) this.#firstChecked = event.sequence;
      this.#lastChecked = event.sequence;
      this.checked += 1;
      if (digest !== eventDigest(event)) {
        this.#mismatches += 1;
        report.defects.push({
          where,
          sequence: event.sequence,
          message: `${event.type} is not the event that was appended (per-event digest mismatch): its row was changed after it was written`,
        });
      }
    }
  }

  /** Adds what the digests covered to `report`. */
  finish(report: VerifyReport): void {
    const missing = this.missingFrom === 0 ? 0 : this.missingTo - this.missingFrom + 1;
    report.eventDigests = { checked: this.checked, missing };
    if (missing > 0) {
      const range = missing === 1 ? `event ${this.missingFrom} has` : `events ${this.missingFrom}-${this.missingTo} have`;
      report.notes.push(`${range} no stored per-event digest (written before the store kept digests): an edit of them is seen only at or before the latest checkpoint`);
    }
    if (this.checked > 0 && this.#mismatches === 0) {
      report.notes.push(`per-event digests match for events ${this.#firstChecked}-${this.#lastChecked}`);
    }
  }
}

/** Progress callback: events checked so far and the expected total (unknown while pass 1 reads the files). */
type VerifyProgress = (done: number, total?: number) => void;

/**
 * Reads one JSONL file through the store's own reader ({@link LineFile}, read-only: nothing is
 * created, written, truncated or repaired), handing every complete line to `accept`, which lists
 * problems instead of throwing, so one run finds every bad line. Returns where a torn tail (a last
 * line without its newline, which the store ignores) starts, or `undefined`; `null` when the file
 * does not exist.
 */
async function readLines(file: string, accept: (line: Buffer, offset: number) => void): Promise<number | undefined | null> {
  const reader = new LineFile(
    file,
    { accept, reset: () => undefined, corrupt: (message, details) => new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', message, { details }) },
    { readOnly: true },
  );
  try {
    await reader.catchUp();
    if (!reader.isOpen) return null;
    return reader.size > reader.validSize ? reader.validSize : undefined;
  } finally {
    reader.close();
  }
}

/** A problem {@link checkLogLine} found in the log line at byte `offset`, as a defect. */
function logDefect(found: LogLineProblem, sessionId: SessionId, where: string, offset: number): VerifyDefect {
  switch (found.kind) {
    case 'utf8':
      return { where, offset, message: 'not valid UTF-8' };
    case 'json':
      if (found.text.trim() === '') return { where, offset, message: 'empty line' };
      return { where, offset, message: `not JSON (${found.error instanceof Error ? found.error.message : String(found.error)})` };
    case 'not-batch':
      return { where, offset, message: 'not a non-empty JSON array of events' };
    case 'envelope':
      return { where: `${where}, event ${found.index + 1}`, offset, message: found.problem };
    case 'session':
      return { where, offset, sequence: found.event.sequence, message: `event of session ${found.event.sessionId}, not ${sessionId}` };
    case 'sequence':
      return { where, offset, sequence: found.event.sequence, message: `sequence ${found.event.sequence} where ${found.expected} was expected` };
    case 'duplicate':
      return { where, offset, sequence: found.event.sequence, message: `event ID ${found.event.eventId} is used twice` };
  }
}

/** Checks the JSONL files of one session (pass 1), with the store's own line rules. */
async function verifyJsonlFiles(root: string, sessionId: SessionId, report: VerifyReport, onProgress?: VerifyProgress): Promise<void> {
  const files = sessionPaths(root, sessionId);
  let expected = 1;
  let lineCount = 0;
  const ids = new Set<string>();
  const logTail = await readLines(files.log, (line, offset) => {
    lineCount += 1;
    const where = `log line at byte ${offset}`;
    ({ next: expected } = checkLogLine(line, sessionId, expected, ids, (found) => report.defects.push(logDefect(found, sessionId, where, offset))));
    onProgress?.(expected - 1);
  });
  if (logTail === null) {
    report.defects.push({ where: 'store', message: `no log file for session ${sessionId} (${files.log})` });
    return;
  }
  if (logTail !== undefined) {
    report.notes.push(`log line at byte ${logTail} has no newline: a torn tail from an interrupted write (readers ignore it; the next append truncates it)`);
  }
  report.lines = lineCount;
  const identities = new Map<string, number>();
  let sequence = 1;
  const durabilityTail = await readLines(files.durability, (line, offset) => {
    const where = `durability line at byte ${offset}`;
    const checked = checkDurabilityLine(line, sessionId, sequence, identities);
    sequence += 1;
    if (!('kind' in checked)) return;
    const message =
      checked.kind === 'utf8'
        ? 'not valid UTF-8'
        : checked.kind === 'duplicate'
          ? `record identity ${checked.identity} appears twice`
          : checked.error instanceof Error
            ? checked.error.message
            : String(checked.error);
    report.defects.push({ where, offset, message });
  });
  if (typeof durabilityTail === 'number') report.notes.push(`durability line at byte ${durabilityTail} has no newline: a torn tail from an interrupted write`);
}

/**
 * Checks one session of the JSONL store at `root`: its files (pass 1), then, when they hold no
 * defect, the log as a read-only store serves it (pass 2). Nothing in the directory is written.
 */
export async function verifyJsonlSession(root: string, sessionId: SessionId, report: VerifyReport, onProgress?: VerifyProgress): Promise<void> {
  await verifyJsonlFiles(root, sessionId, report, onProgress);
  if (report.defects.length > 0) return;
  const { JsonlDurableEventStore } = await import('../adapters/node/jsonl/jsonl-store.js');
  const store = new JsonlDurableEventStore(root, { readOnly: true });
  try {
    await verifyThroughStore(store, sessionId, report, onProgress);
  } finally {
    await store.close();
  }
}

/** Checks the log as `store` serves it, through the projector, and the durability records (pass 2). */
export async function verifyThroughStore(
  store: DurableEventStore,
  sessionId: SessionId,
  report: VerifyReport,
  onProgress?: VerifyProgress,
): Promise<void> {
  const projector = new DurableSessionProjector({ sessionId });
  let last: DurableEventEnvelope | undefined;
  let count = 0;
  let audit: CheckpointAudit | null = null;
  let digests = isEventDigestStore(store) ? new EventDigestCheck(store, sessionId) : null;
  if (digests === null) report.notes.push('this store keeps no per-event digests: an edit of an event after the latest checkpoint goes unseen');
  try {
    audit = await CheckpointAudit.read(store, sessionId);
  } catch (error) {
    report.notes.push(`the stored checkpoint could not be read (${error instanceof Error ? error.message : String(error)}); an open folds the whole log`);
  }
  try {
    for (;;) {
      const page = await store.read(sessionId, { ...(last === undefined ? {} : { after: last.sequence }), limit: 1000 });
      if (digests !== null) {
        try {
          await digests.page(page.events, report);
        } catch (error) {
          report.notes.push(`the per-event digests could not be read after sequence ${last?.sequence ?? 0} (${error instanceof Error ? error.message : String(error)}); they were not checked`);
          digests = null;
        }
      }
      for (const event of page.events) {
        try {
          projector.apply([event]);
        } catch (error) {
          const details = isDurableError(error) ? (error.details as { rule?: string } | undefined) : undefined;
          report.defects.push({
            where: `sequence ${event.sequence}`,
            sequence: event.sequence,
            message: `${event.type} breaks the projection${details?.rule === undefined ? '' : ` (rule ${details.rule})`}: ${error instanceof Error ? error.message : String(error)}`,
          });
          report.events = count;
          // The audit may have passed the checkpoint before this event: report what it found.
          reportAudit(report, audit?.result ?? null);
          digests?.finish(report);
          return;
        }
        if (audit !== null) {
          try {
            audit.observe(event, projector);
          } catch (error) {
            report.notes.push(`the checkpoint audit stopped at sequence ${event.sequence}: ${error instanceof Error ? error.message : String(error)}`);
            audit = null;
          }
        }
        count += 1;
      }
      last = page.events[page.events.length - 1] ?? last;
      onProgress?.(count, page.headSequence ?? count);
      if (!page.hasMore || page.events.length === 0) break;
    }
  } catch (error) {
    const code = isDurableError(error) ? `${error.code}: ` : '';
    report.defects.push({ where: `after sequence ${last?.sequence ?? 0}`, message: `the store refused to read the log: ${code}${error instanceof Error ? error.message : String(error)}` });
  }
  report.events = count;
  digests?.finish(report);
  if (count === 0 && report.defects.length === 0) report.defects.push({ where: 'store', message: `session ${sessionId} has no events` });
  // A read failure above leaves the fold short: the audit is then inconclusive, not "beyond the head".
  reportAudit(report, audit === null ? null : report.defects.length === 0 ? audit.finish(count) : audit.result);
  try {
    const records = await readDurabilityRecords(store, sessionId);
    report.durabilityRecords = records === null ? null : records.length;
    if (records === null) report.notes.push('this store has no durability records API; they were not checked');
  } catch (error) {
    const code = isDurableError(error) ? `${error.code}: ` : '';
    const details = isDurableError(error) ? (error.details as { sequence?: number } | undefined) : undefined;
    report.defects.push({
      where: details?.sequence === undefined ? 'durability records' : `durability record ${details.sequence}`,
      message: `${code}${error instanceof Error ? error.message : String(error)}`,
    });
  }
}

/** Adds a finished checkpoint audit to `report` (nothing when there is none, or it did not finish). */
function reportAudit(report: VerifyReport, audited: CheckpointAuditResult | null): void {
  if (audited === null) return;
  report.checkpoint = { sequence: audited.sequence, status: audited.status };
  for (const message of audited.defects) report.defects.push({ where: `checkpoint at sequence ${audited.sequence}`, sequence: audited.sequence, message });
  report.notes.push(...audited.notes);
  if (audited.status === 'wrong') report.notes.push(`\`agent-ledger checkpoint <store> ${report.sessionId} --rebuild\` replaces the checkpoint with one folded from the whole log`);
  if (audited.status === 'matches') report.notes.push(`the checkpoint at sequence ${audited.sequence} matches the log (anchor, digest, fold state, commands, IDs)`);
}

/** The first complete line of `file`, read through the store's reader (read-only); `undefined` when it has none. */
async function firstLine(file: string): Promise<Buffer | undefined> {
  let first: Buffer | undefined;
  const stop = new Error('the first line is read');
  try {
    await readLines(file, (line) => {
      first = Buffer.from(line);
      throw stop;
    });
  } catch (error) {
    if (error !== stop) throw error;
  }
  return first;
}

/**
 * Session IDs of every log in a JSONL store: each file the store's naming rule calls a log, its
 * session read from its first line. A file whose first line names no valid session, or a session
 * whose log (by the same rule) is another file, is listed in `unreadable` with the reason.
 */
export async function listJsonlSessions(root: string): Promise<{ sessions: SessionId[]; unreadable: Array<{ name: string; problem: string }> }> {
  const directory = path.join(root, EVENTS_DIRECTORY);
  if (!existsSync(directory)) return { sessions: [], unreadable: [] };
  const sessions: SessionId[] = [];
  const unreadable: Array<{ name: string; problem: string }> = [];
  for (const name of readdirSync(directory).sort()) {
    const stem = logFileStem(name);
    if (stem === undefined) continue;
    let found: string | undefined;
    try {
      const batch: unknown = JSON.parse((await firstLine(path.join(directory, name)))?.toString('utf8') ?? '');
      const first: unknown = Array.isArray(batch) ? batch[0] : undefined;
      const id = typeof first === 'object' && first !== null ? (first as { sessionId?: unknown }).sessionId : undefined;
      if (typeof id === 'string' && describeInvalidId(id) === undefined) found = id;
    } catch {
      // Reported by verify; here the name simply stays unknown.
    }
    if (found === undefined) unreadable.push({ name, problem: 'its first line names no valid session' });
    // SAFETY: checked with the SessionId rule above.
    else if (sessionFileStem(found as SessionId) !== stem) {
      unreadable.push({ name, problem: `its first line names session ${found}, whose log is ${path.basename(sessionPaths(root, found as SessionId).log)}` });
    } else sessions.push(found as SessionId);
  }
  return { sessions, unreadable };
}
