/**
 * One session's durability records file (`{name}.ledger.jsonl`), as this process last validated it.
 *
 * One line per record: the record's JSON in its own key order (like the SQL stores' `body`, so a
 * replay returns a step result with the key order it was recorded with), then `\n`. The bytes,
 * the tail catch-up and torn-tail repair belong to a {@link LineFile}; this object validates the
 * lines and keeps two indexes, both caught up from the tail like the event head:
 * - identity -> sequence (`durabilityIdentity`), so first-writer-wins needs no file scan;
 * - sequence -> byte offset (a {@link BatchIndex} with one record per entry), so a page or a
 *   single record is one positional read.
 * Every line taken in is decoded strictly (`decodeDurabilityRecord`: UTF-8, shape, this session,
 * sequence `head + 1`) and its identity must be new; anything else is `DURABILITY_CORRUPT_RECORD`
 * (fail closed, never skipped). Records read back later are decoded again and checked against
 * their position and identity, so bytes edited in place after validation fail closed too.
 * Every method runs while the caller holds the session lock.
 */
import {
  decodeDurabilityRecord,
  durabilityIdentity,
} from '../../../core/durability/record-engine.js';
import type { DurabilityRecord } from '../../../core/durability/record-contract.js';
import { DurabilityError } from '../../../protocol/errors.js';
import type { SessionId } from '../../../protocol/ids.js';
import { BatchIndex } from './batch-index.js';
import { LineFile, type LineOwner } from './line-file.js';

// `ignoreBOM: true` keeps a leading U+FEFF in the text, so JSON.parse refuses it here exactly as the page
// read (plain `toString('utf8')`) does: a line is judged one way on the append and the read path.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function corrupt(message: string, details: Record<string, unknown>, cause?: unknown): DurabilityError {
  return new DurabilityError('DURABILITY_CORRUPT_RECORD', message, {
    details,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** What is wrong with one durability line, as {@link checkDurabilityLine} finds it. */
export type DurabilityLineProblem =
  | { kind: 'utf8'; error: unknown }
  | { kind: 'record'; error: unknown }
  /** The record's identity is already record `first`'s. */
  | { kind: 'duplicate'; identity: string; first: number };

/**
 * The rules of one durability line (without its `\n`), which both the store and `agent-ledger verify`
 * apply: valid UTF-8, a valid record of `sessionId` with sequence `sequence`
 * (`decodeDurabilityRecord`), and, given `identities`, an identity not yet in it (it is then
 * added). Returns the record, or the problem.
 */
export function checkDurabilityLine(
  line: Buffer,
  sessionId: SessionId,
  sequence: number,
  identities?: Map<string, number>,
): { record: DurabilityRecord } | DurabilityLineProblem {
  let text: string;
  try {
    text = strictUtf8.decode(line);
  } catch (error) {
    return { kind: 'utf8', error };
  }
  let record: DurabilityRecord;
  try {
    record = decodeDurabilityRecord(text, { sessionId, sequence });
  } catch (error) {
    return { kind: 'record', error };
  }
  if (identities !== undefined) {
    const identity = durabilityIdentity(record);
    const first = identities.get(identity);
    if (first !== undefined) return { kind: 'duplicate', identity, first };
    identities.set(identity, sequence);
  }
  return { record };
}

/** The validated state of one session's durability records file. */
export class SessionDurabilityFile implements LineOwner {
  readonly #file: LineFile;
  /** Record `n` is entry `n - 1`: its sequence and the byte offset of its line. */
  readonly #offsets = new BatchIndex();
  readonly #byIdentity = new Map<string, number>();
  #head = 0;

  /** `readOnly`: the file is opened `O_RDONLY` and never written, truncated or repaired (see {@link LineFile}). */
  constructor(
    readonly path: string,
    readonly sessionId: SessionId,
    options: { readOnly?: boolean } = {},
  ) {
    this.#file = new LineFile(path, this, options);
  }

  /** The validated durability head, `null` when empty. */
  get head(): number | null {
    return this.#head === 0 ? null : this.#head;
  }

  /** True when this object has an open descriptor (the file existed at the last look). */
  get isOpen(): boolean {
    return this.#file.isOpen;
  }

  /** `ino:size` of the validated file (see {@link LineFile.identity}). */
  get identity(): string {
    return this.#file.identity;
  }

  /** @internal {@link LineOwner}: forget both indexes. */
  reset(): void {
    this.#offsets.clear();
    this.#byIdentity.clear();
    this.#head = 0;
  }

  /** @internal {@link LineOwner}: the durability file's corrupt error. */
  corrupt(message: string, details: Record<string, unknown>): Error {
    return corrupt(message, details);
  }

  /** Drops the indexes and the descriptor. */
  close(): void {
    this.#file.close();
  }

  /** Brings the indexes up to date with the file; a promise only when there are new bytes to read. */
  catchUp(): Promise<void> | undefined {
    return this.#file.catchUp();
  }

  /** Decodes the line at byte `offset` as record `sequence` (and checks its identity is new, given `identities`). */
  #decode(line: Buffer, sequence: number, offset: number, identities?: Map<string, number>): DurabilityRecord {
    const checked = checkDurabilityLine(line, this.sessionId, sequence, identities);
    if (!('kind' in checked)) return checked.record;
    const where = { path: this.path, offset, sequence };
    switch (checked.kind) {
      case 'utf8':
        throw corrupt(`${this.path}: the line at byte ${offset} is not valid UTF-8`, where, checked.error);
      case 'record': {
        const message = checked.error instanceof Error ? checked.error.message : String(checked.error);
        throw corrupt(`${this.path}: the line at byte ${offset} is not a valid record: ${message}`, where, checked.error);
      }
      case 'duplicate':
        throw corrupt(`${this.path}: records ${checked.first} and ${sequence} share the identity ${checked.identity}`, where);
    }
  }

  /** @internal {@link LineOwner}: validates one complete line and advances the head past it. */
  accept(line: Buffer, offset: number): void {
    const sequence = this.#head + 1;
    this.#decode(line, sequence, offset, this.#byIdentity);
    this.#offsets.push(sequence, offset);
    this.#head = sequence;
  }

  /** The sequence of the record stored under `identity`, if any. */
  sequenceOf(identity: string): number | undefined {
    return this.#byIdentity.get(identity);
  }

  /** Where records `after + 1 .. min(after + limit, head)` lie: a byte range and each line's end in it. */
  #locate(after: number, limit: number): { first: number; from: number; to: number; ends: number[] } | undefined {
    const first = after + 1;
    const last = Math.min(after + limit, this.#head);
    if (first > last) return undefined;
    const from = this.#offsets.offset(first - 1);
    const ends: number[] = [];
    for (let sequence = first; sequence <= last; sequence++) {
      const next = sequence < this.#head ? this.#offsets.offset(sequence) : this.#file.validSize;
      ends.push(next - 1 - from);
    }
    // SAFETY: `ends` holds one entry per record of a non-empty range.
    return { first, from, to: from + (ends[ends.length - 1] as number) + 1, ends };
  }

  /** Decodes the located records from `bytes`, checking every line ends where it was validated to. */
  #decodeRange(range: { first: number; from: number; ends: number[] }, bytes: Buffer): DurabilityRecord[] {
    const records: DurabilityRecord[] = [];
    let lineStart = 0;
    range.ends.forEach((expectedEnd, index) => {
      const sequence = range.first + index;
      const lineEnd = bytes.indexOf(0x0a, lineStart);
      if (lineEnd !== expectedEnd) {
        throw corrupt(`${this.path} changed after validation (record ${sequence})`, { path: this.path, sequence });
      }
      records.push(this.#decode(bytes.subarray(lineStart, lineEnd), sequence, range.from + lineStart));
      lineStart = lineEnd + 1;
    });
    return records;
  }

  /** Records `after + 1 .. min(after + limit, head)`, decoded and checked again. */
  async readPage(after: number, limit: number): Promise<DurabilityRecord[]> {
    const range = this.#locate(after, limit);
    if (range === undefined) return [];
    return this.#decodeRange(range, await this.#file.readRange(range.from, range.to));
  }

  /**
   * {@link readPage} with a blocking read, for a reader without the lock that checked
   * {@link isCurrent}; `undefined` when the page is too large for a blocking read.
   */
  readPageSync(after: number, limit: number): DurabilityRecord[] | undefined {
    const range = this.#locate(after, limit);
    if (range === undefined) return [];
    const bytes = this.#file.readRangeSync(range.from, range.to);
    return bytes === undefined ? undefined : this.#decodeRange(range, bytes);
  }

  /** True when the indexes describe the whole file (see {@link LineFile.isCurrent}). */
  isCurrent(): boolean {
    return this.#file.isCurrent();
  }

  /** The record stored under `identity` (its sequence came from {@link sequenceOf}), read back and checked. */
  async readRecord(sequence: number, identity: string): Promise<DurabilityRecord> {
    const [record] = await this.readPage(sequence - 1, 1);
    if (record === undefined || durabilityIdentity(record) !== identity) {
      throw corrupt(`${this.path} changed after validation (record ${sequence})`, { path: this.path, sequence });
    }
    return record;
  }

  /**
   * Appends `record` (sequence `head + 1`, identity not yet stored) as one line, fsyncs, then
   * indexes it. Throws `DURABLE_EVENT_WRITE_FAILED` when the write fails (outcome unknown).
   */
  appendSync(record: DurabilityRecord, identity: string): void {
    if (record.sequence !== this.#head + 1 || this.#byIdentity.has(identity)) {
      throw new Error(`durability record ${record.sequence} does not follow head ${this.#head} or repeats an identity`);
    }
    const line = Buffer.from(`${JSON.stringify(record)}\n`);
    this.#file.appendSync(line, (position) => {
      this.#offsets.push(record.sequence, position);
      this.#byIdentity.set(identity, record.sequence);
      this.#head = record.sequence;
    });
  }
}
