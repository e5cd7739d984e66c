/**
 * One session's JSONL event log, as this process last validated it.
 *
 * The file holds one line per append batch: a JSON array of envelopes, then `\n`. The bytes, the
 * tail catch-up and torn-tail repair belong to a {@link LineFile}; this object validates the lines
 * and keeps the validated head and a {@link BatchIndex}. Every method runs while the caller holds
 * the session lock.
 * 1. `catchUp` takes in every new complete line strictly: valid UTF-8 JSON, a non-empty array,
 *    every element a v4 envelope of this session, sequences contiguous from the head, event IDs
 *    unique among the lines scanned together. Anything else is `DURABLE_EVENT_CORRUPT_LOG`.
 * 2. `readPage` finds the batches holding the wanted sequences in the index, reads only that byte
 *    range and re-checks the structure (sequence, session ID) of what it returns, so bytes that
 *    changed in place since validation fail closed instead of being served.
 * 3. `appendSync` writes complete batch lines at the validated size, fsyncs, and only then
 *    advances the head and the index.
 */
import { encodedEventBytes } from '../../../core/log-engine.js';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import { parseDurableEventEnvelope, safeParseDurableEventEnvelope, type DurableEventEnvelope } from '../../../protocol/events.js';
import { EventSequence, type SessionId } from '../../../protocol/ids.js';
import { BatchIndex } from './batch-index.js';
import { LineFile, type LineOwner } from './line-file.js';
import {
  decodeValidatedState,
  FIRST_BYTES_HASHED,
  MAX_VERIFIED_LINE_BYTES,
  SAVE_AFTER_BYTES,
  sha256,
  SPARSE_INDEX_BYTES,
  writeValidatedState,
} from './validated-state.js';

// `ignoreBOM: true` keeps a leading U+FEFF in the text, so JSON.parse refuses it here exactly as the page
// read (plain `toString('utf8')`) does: a line is judged one way on the append and the read path.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A batch being appended: its first and last sequence and the bytes of its line (with `\n`). */
export interface BatchSpan {
  first: number;
  last: number;
  bytes: number;
  /** Event ID of the batch's last event. */
  lastEventId: string;
}

function corrupt(message: string, details: Record<string, unknown>, cause?: unknown): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_CORRUPT_LOG', message, {
    details,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** What is wrong with one line of a log, as {@link checkLogLine} finds it. */
export type LogLineProblem =
  | { kind: 'utf8'; error: unknown }
  | { kind: 'json'; text: string; error: unknown }
  | { kind: 'not-batch' }
  /** Element `index` (from 0) of the batch is not a valid envelope. */
  | { kind: 'envelope'; index: number; problem: string }
  | { kind: 'session'; event: DurableEventEnvelope }
  | { kind: 'sequence'; event: DurableEventEnvelope; expected: number }
  | { kind: 'duplicate'; event: DurableEventEnvelope };

/**
 * The rules of one log line (without its `\n`), which both the store and `agent-ledger verify`
 * apply: valid UTF-8 JSON, a non-empty array, every element a v4 envelope of `sessionId` with the
 * sequence `next` (then the one after it) and an event ID not in `seen` (IDs are added). Each
 * problem goes to `problem`; the store throws there, `verify` lists it and goes on (a bad envelope
 * takes one sequence, a wrong sequence restarts the count after it). Returns the sequence
 * expected after the line and the line's last event ID.
 */
export function checkLogLine(
  line: Buffer,
  sessionId: SessionId,
  next: number,
  seen: Set<string>,
  problem: (found: LogLineProblem) => void,
): { next: number; lastEventId: string } {
  let text: string;
  try {
    text = strictUtf8.decode(line);
  } catch (error) {
    problem({ kind: 'utf8', error });
    return { next, lastEventId: '' };
  }
  let batch: unknown;
  try {
    batch = JSON.parse(text);
  } catch (error) {
    problem({ kind: 'json', text, error });
    return { next, lastEventId: '' };
  }
  if (!Array.isArray(batch) || batch.length === 0) {
    problem({ kind: 'not-batch' });
    return { next, lastEventId: '' };
  }
  let lastEventId = '';
  for (let index = 0; index < batch.length; index++) {
    const parsed = safeParseDurableEventEnvelope(batch[index]);
    if (!parsed.ok) {
      problem({ kind: 'envelope', index, problem: parsed.problem });
      next++;
      continue;
    }
    const event = parsed.value;
    if (event.sessionId !== sessionId) problem({ kind: 'session', event });
    if (event.sequence !== next) problem({ kind: 'sequence', event, expected: next });
    if (seen.has(event.eventId)) problem({ kind: 'duplicate', event });
    seen.add(event.eventId);
    lastEventId = event.eventId;
    next = event.sequence + 1;
  }
  return { next, lastEventId };
}

/** The validated state of one session log file. */
export class SessionLog implements LineOwner {
  readonly #index = new BatchIndex();
  readonly #file: LineFile;
  #head = 0;
  /** Event IDs of the lines taken in by the catch-up under way. */
  #seen: Set<string> | undefined;
  /** Offset, first sequence and last event ID of the last validated line. */
  #lastLineOffset = 0;
  #lastLineFirst = 0;
  #lastEventId = '';
  /** Validated size the validated-state sidecar describes (0: none known). */
  #savedSize = 0;
  /** Path of the validated-state sidecar (see `validated-state.ts`). */
  readonly validatedPath: string;

  /**
   * `readOnly`: the log is opened `O_RDONLY` and never written, truncated or repaired, and the
   * validated-state sidecar is read but never written (see {@link LineFile}).
   */
  constructor(
    readonly path: string,
    readonly sessionId: SessionId,
    readonly options: { readOnly?: boolean } = {},
  ) {
    this.#file = new LineFile(path, this, options);
    this.validatedPath = `${path}.validated`;
  }

  /** The validated head, `null` for an empty log. */
  get head(): EventSequence | null {
    return this.#head === 0 ? null : EventSequence(this.#head);
  }

  /** Batches indexed in memory. */
  get batchCount(): number {
    return this.#index.size;
  }

  /** True when this object has an open descriptor (the log existed at the last look). */
  get isOpen(): boolean {
    return this.#file.isOpen;
  }

  /** `ino:size` of the validated log (see {@link LineFile.identity}). */
  get identity(): string {
    return this.#file.identity;
  }

  /** @internal {@link LineOwner}: forget the head and the index. */
  reset(): void {
    this.#index.clear();
    this.#head = 0;
    this.#seen = undefined;
    this.#lastLineOffset = 0;
    this.#lastLineFirst = 0;
    this.#lastEventId = '';
    this.#savedSize = 0;
  }

  /**
   * @internal {@link LineOwner}: trusts the validated-state sidecar for the first bytes of a
   * just-opened log once it checks out against the file (see `validated-state.ts`); returns the
   * trusted size, or 0 (validate everything) on any mismatch or error.
   */
  restore(file: LineFile, size: number): number {
    try {
      const state = decodeValidatedState(this.validatedPath, this.sessionId);
      if (state === undefined || state.validSize > size) return 0;
      const { dev, ino } = file.fileId;
      if (state.dev !== dev || state.ino !== ino) return 0;
      const first = file.readBytesSync(0, Math.min(FIRST_BYTES_HASHED, state.validSize));
      if (first === undefined || sha256(first) !== state.firstBytesSha256) return 0;
      if (state.validSize - state.lastLineOffset > MAX_VERIFIED_LINE_BYTES) return 0;
      const line = file.readBytesSync(state.lastLineOffset, state.validSize);
      if (line === undefined || sha256(line) !== state.lastLineSha256) return 0;
      if (line.indexOf(0x0a) !== line.length - 1) return 0;
      if (state.lastLineOffset > 0) {
        const before = file.readBytesSync(state.lastLineOffset - 1, state.lastLineOffset);
        if (before === undefined || before[0] !== 0x0a) return 0;
      }
      const batch: unknown = JSON.parse(strictUtf8.decode(line.subarray(0, line.length - 1)));
      if (!Array.isArray(batch) || batch.length === 0) return 0;
      let expected = state.lastLineFirst;
      let last: DurableEventEnvelope | undefined;
      for (const value of batch) {
        last = parseDurableEventEnvelope(value);
        if (last.sessionId !== this.sessionId || last.sequence !== expected) return 0;
        expected++;
      }
      if (last === undefined || last.sequence !== state.head || last.eventId !== state.lastEventId) return 0;
      this.reset();
      for (const [sequence, offset] of state.index) this.#index.push(sequence, offset);
      if (state.index[state.index.length - 1]?.[1] !== state.lastLineOffset) {
        this.#index.push(state.lastLineFirst, state.lastLineOffset);
      }
      this.#head = state.head;
      this.#lastLineOffset = state.lastLineOffset;
      this.#lastLineFirst = state.lastLineFirst;
      this.#lastEventId = state.lastEventId;
      this.#savedSize = state.validSize;
      return state.validSize;
    } catch {
      this.reset();
      return 0;
    }
  }

  /**
   * Records the validated state in the sidecar (under the session lock; errors are ignored: it
   * only saves a later open some work). No-op when nothing new was validated since the last save.
   */
  saveValidatedState(): void {
    const validSize = this.#file.validSize;
    if (this.options.readOnly === true || this.#head === 0 || !this.#file.isOpen || validSize <= this.#savedSize) return;
    try {
      const first = this.#file.readBytesSync(0, Math.min(FIRST_BYTES_HASHED, validSize));
      const line = this.#file.readBytesSync(this.#lastLineOffset, validSize);
      if (first === undefined || line === undefined) return;
      const index: Array<[number, number]> = [];
      let kept = -SPARSE_INDEX_BYTES;
      for (let i = 0; i < this.#index.size; i++) {
        const offset = this.#index.offset(i);
        if (offset > this.#lastLineOffset) break;
        if (offset - kept >= SPARSE_INDEX_BYTES || offset === this.#lastLineOffset) {
          index.push([this.#index.firstSequence(i), offset]);
          kept = offset;
        }
      }
      writeValidatedState(this.validatedPath, {
        sessionId: this.sessionId,
        ...this.#file.fileId,
        validSize,
        head: this.#head,
        lastLineOffset: this.#lastLineOffset,
        lastLineFirst: this.#lastLineFirst,
        lastEventId: this.#lastEventId,
        firstBytesSha256: sha256(first),
        lastLineSha256: sha256(line),
        index,
      });
      this.#savedSize = validSize;
    } catch {
      // Derived data: the next open validates more, that is all.
    }
  }

  #saveIfGrown(): void {
    if (this.#file.validSize - this.#savedSize >= SAVE_AFTER_BYTES) this.saveValidatedState();
  }

  /** @internal {@link LineOwner}: the log's corrupt error. */
  corrupt(message: string, details: Record<string, unknown>): Error {
    return corrupt(message, details);
  }

  /** Drops the cache and the descriptor. */
  close(): void {
    this.#file.close();
  }

  /**
   * Brings the cache up to date with the file. Returns a promise only when there are new bytes to
   * read and validate; `undefined` means the cache is already current.
   */
  catchUp(): Promise<void> | undefined {
    const scanning = this.#file.catchUp();
    if (scanning === undefined) return undefined;
    const done = (): void => {
      this.#seen = undefined;
    };
    return scanning.then(() => {
      done();
      this.#saveIfGrown();
    }, (error: unknown) => {
      done();
      throw error;
    });
  }

  /** @internal {@link LineOwner}: validates one complete line and advances the head past it. */
  accept(line: Buffer, offset: number): void {
    const where = { path: this.path, offset };
    const { next, lastEventId } = checkLogLine(line, this.sessionId, this.#head + 1, (this.#seen ??= new Set()), (found) => {
      throw this.#lineError(found, offset, where);
    });
    this.#index.push(this.#head + 1, offset);
    this.#lastLineOffset = offset;
    this.#lastLineFirst = this.#head + 1;
    this.#lastEventId = lastEventId;
    this.#head = next - 1;
  }

  /** The store's error for the first problem of the line at byte `offset`. */
  #lineError(found: LogLineProblem, offset: number, where: { path: string; offset: number }): DurableEventStoreError {
    switch (found.kind) {
      case 'utf8':
      case 'json':
        return corrupt(`${this.path}: the line at byte ${offset} is not valid JSON`, where, found.error);
      case 'not-batch':
        return corrupt(`${this.path}: the line at byte ${offset} is not a non-empty batch array`, where);
      case 'envelope':
        return corrupt(
          `${this.path}: invalid event in the line at byte ${offset}: ${found.problem}`,
          where,
          new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', found.problem),
        );
      case 'session':
        return corrupt(`${this.path}: an event at byte ${offset} belongs to another session`, where);
      case 'sequence':
        return corrupt(`${this.path}: expected sequence ${found.expected} at byte ${offset}, found ${found.event.sequence}`, {
          ...where,
          expected: found.expected,
          actual: found.event.sequence,
        });
      case 'duplicate':
        return corrupt(`${this.path}: duplicate event ID ${found.event.eventId} at byte ${offset}`, {
          ...where,
          eventId: found.event.eventId,
        });
    }
  }

  /**
   * Events with sequences `after + 1 .. min(after + limit, head)`, read through the index, cut to
   * `maxBytes` of encoded events (see `buildReadPage`; the first event always comes). Only the
   * batches that can contribute are read: reading stops at the first batch that starts past the
   * budget. A whole line that fits is counted by its bytes (an upper bound of its events' sizes);
   * the line that crosses the budget is measured event by event.
   */
  async readPage(after: number, limit: number, maxBytes: number): Promise<DurableEventEnvelope[]> {
    const start = after + 1;
    let end = Math.min(after + limit, this.#head);
    if (start > end || !this.#file.isOpen) return [];
    const first = this.#index.batchOf(start);
    let last = this.#index.batchOf(end);
    const from = this.#index.offset(first);
    for (let batch = first + 1; batch <= last; batch++) {
      if (this.#index.offset(batch) - from >= maxBytes) {
        last = batch - 1;
        end = this.#index.firstSequence(batch) - 1;
        break;
      }
    }
    const to = last + 1 < this.#index.size ? this.#index.offset(last + 1) : this.#file.validSize;
    const bytes = await this.#file.readRange(from, to);
    const events: DurableEventEnvelope[] = [];
    let expected = this.#index.firstSequence(first);
    let used = 0;
    let full = false;
    let lineStart = 0;
    while (lineStart < bytes.length) {
      let lineEnd = bytes.indexOf(0x0a, lineStart);
      if (lineEnd === -1) lineEnd = bytes.length;
      let batch: unknown;
      try {
        batch = JSON.parse(bytes.toString('utf8', lineStart, lineEnd));
      } catch (error) {
        throw corrupt(`${this.path} changed after validation (byte ${from + lineStart})`, { path: this.path }, error);
      }
      if (!Array.isArray(batch)) throw corrupt(`${this.path} changed after validation`, { path: this.path });
      // Lines wholly before `start` (a sparse index entry from the validated-state sidecar can
      // start a range several lines early) do not count against the budget.
      const wanted = expected + batch.length - 1 >= start;
      const lineFits = used + (lineEnd - lineStart) <= maxBytes;
      if (lineFits && wanted) used += lineEnd - lineStart;
      for (const value of batch as unknown[]) {
        const event = value as Partial<DurableEventEnvelope> | null;
        if (typeof event !== 'object' || event === null || event.sequence !== expected || event.sessionId !== this.sessionId) {
          throw corrupt(`${this.path} changed after validation (sequence ${expected})`, { path: this.path });
        }
        if (expected >= start && expected <= end && !full) {
          // SAFETY: this line passed parseDurableEventEnvelope when the cache first covered it, and the
          // file identity and size still match; the structural check above catches in-place edits.
          const envelope = value as DurableEventEnvelope;
          if (!lineFits) {
            const size = encodedEventBytes(envelope);
            if (events.length > 0 && used + size > maxBytes) full = true;
            else used += size;
          }
          if (!full) events.push(envelope);
        }
        expected++;
      }
      lineStart = lineEnd + 1;
    }
    const lastOfRange = last + 1 < this.#index.size ? this.#index.firstSequence(last + 1) - 1 : this.#head;
    if (expected - 1 !== lastOfRange) throw corrupt(`${this.path} changed after validation`, { path: this.path });
    return events;
  }

  /**
   * Writes `lines` (complete, newline-terminated batches) at the validated size, fsyncs, then
   * advances the cache over `spans`. Throws `DURABLE_EVENT_WRITE_FAILED`; bytes may have reached
   * the file anyway (the next catch-up will see them).
   */
  appendSync(lines: Buffer, spans: readonly BatchSpan[]): void {
    this.#file.appendSync(lines, (position) => {
      let offset = position;
      for (const span of spans) {
        this.#index.push(span.first, offset);
        this.#head = span.last;
        this.#lastLineOffset = offset;
        this.#lastLineFirst = span.first;
        this.#lastEventId = span.lastEventId;
        offset += span.bytes;
      }
    });
    this.#saveIfGrown();
  }
}
