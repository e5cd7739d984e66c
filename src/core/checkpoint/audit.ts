/**
 * Auditing a stored checkpoint against its log: what `agent-ledger verify` runs.
 *
 * An open trusts a checkpoint after comparing one event (the anchor at its sequence), because
 * reading the prefix is the cost checkpoints exist to avoid. So a log whose events before the
 * anchor were rewritten, with the anchor event kept byte-identical, opens from a projection of the
 * old log. An audit folds the whole log anyway, and checks everything the checkpoint claims, at
 * its sequence:
 * 1. the anchor (event ID and canonical hash): on a mismatch an open discards the checkpoint and
 *    rebuilds, so the projection is not wrong (status `discarded`), but the log is not the one the
 *    checkpoint was written from: a defect of the log. So is a log that ends before the
 *    checkpoint's sequence (events were removed, or the log is an older copy);
 * 2. the running digest of every event's whole canonical content (`chainDigest`): a mismatch
 *    behind a matching anchor means an event at or before the checkpoint was changed, added,
 *    removed or reordered, and opens use a projection of the old log: a defect (status `wrong`);
 * 3. the fold state, compared as canonical JSON with the state of a projector that folded the
 *    prefix from the first event;
 * 4. the kept command ranges and the fold position of the command index;
 * 5. the key filter: every ID the prefix used must be in it (a missing one would let a later
 *    event reuse that ID unnoticed). Extra hashes only cause needless rebuilds: a note.
 * Checks 3-5 only fail for a checkpoint written by a build with a bug, or bytes that were
 * rewritten together with their checksums. A checkpoint an open discards whatever the log holds
 * (corrupt, other projector version, other session) says nothing about the log: a note.
 */
import type { DurableEventEnvelope } from '../../protocol/events.js';
import { EventSequence, type SessionId } from '../../protocol/ids.js';
import { canonicalJson, type JsonValue } from '../../protocol/json.js';
import { CommandIndex } from '../command-index.js';
import { DURABLE_PROJECTOR_VERSION, DurableSessionProjector } from '../projector/projector.js';
import type { DurableEventStore } from '../store.js';
import { anchorOf, chainDigest, decodeCheckpoint, type DecodedCheckpoint } from './codec.js';
import { isCheckpointStore } from './contract.js';
import { INITIAL_HASH_STATE, type RunningHashState } from '../hash.js';

/**
 * `value` as a checkpoint stores it (`JSON.stringify`: absent and `undefined` members alike), in
 * canonical form (sorted keys), so two states compare equal exactly when they store the same.
 */
function asStored(value: unknown): string {
  return canonicalJson(JSON.parse(JSON.stringify(value)) as JsonValue);
}

/** What an audit found: problems that make a trusted checkpoint wrong, and harmless findings. */
export interface CheckpointAuditResult {
  /** Sequence the stored checkpoint stands at. */
  readonly sequence: number;
  /**
   * `matches`: every check passed; `discarded`: an open would not use it (it is rebuilt, nothing
   * is wrong); `wrong`: an open would use it and get a projection that differs from the log's.
   */
  readonly status: 'matches' | 'discarded' | 'wrong';
  /**
   * What is wrong (one line each): why `wrong`, or, with `discarded`, how the log differs from the
   * one the checkpoint was written from.
   */
  readonly defects: readonly string[];
  /** Why `discarded`, and harmless findings. */
  readonly notes: readonly string[];
}

/**
 * Follows a fold from the first event and checks the stored checkpoint when the fold reaches its
 * sequence. Create it with {@link CheckpointAudit.read}; call `observe` after the projector folded
 * each event. It keeps its own running digest and command index (what the checkpoint claims about
 * the prefix), so a caller only folds the projector.
 */
export class CheckpointAudit {
  #digest: RunningHashState = INITIAL_HASH_STATE;
  readonly #index = new CommandIndex();
  #result: CheckpointAuditResult | null;

  /** An audit of `checkpoint`, or one decided before any event (`checkpoint` is then `null`). */
  private constructor(
    private readonly checkpoint: DecodedCheckpoint | null,
    decided: CheckpointAuditResult | null,
    /** Sequence the stored checkpoint stands at. */
    readonly sequence: number,
    /** Size of the stored record. */
    readonly bytes: number,
  ) {
    this.#result = decided;
  }

  /**
   * Reads and decodes the stored checkpoint of `sessionId`: `null` when the store keeps none (or
   * no checkpoints at all), else an audit to feed the fold. A record an open cannot use whatever
   * the log holds (corrupt, stale, foreign) gives an audit whose result is already `discarded`.
   */
  static async read(store: unknown, sessionId: SessionId): Promise<CheckpointAudit | null> {
    if (!isCheckpointStore(store)) return null;
    const record = await store.readCheckpoint(sessionId);
    if (record === null) return null;
    const discarded = (why: string): CheckpointAudit =>
      new CheckpointAudit(null, { sequence: record.sequence, status: 'discarded', defects: [], notes: [why] }, record.sequence, record.data.length);
    const decoded = decodeCheckpoint(record);
    if (typeof decoded === 'string') return discarded(`the stored checkpoint is unusable (${decoded}); an open folds the whole log and writes a new one`);
    if (decoded.projectorVersion !== DURABLE_PROJECTOR_VERSION) {
      return discarded(`the stored checkpoint was written by projector version ${decoded.projectorVersion} (this is ${DURABLE_PROJECTOR_VERSION}); an open rebuilds it`);
    }
    if (decoded.sessionId !== sessionId) return discarded(`the stored checkpoint belongs to session ${decoded.sessionId}; an open discards it`);
    return new CheckpointAudit(decoded, null, record.sequence, record.data.length);
  }

  /** The result, once decided (at read, or when the fold reached the checkpoint); else `null`. */
  get result(): CheckpointAuditResult | null {
    return this.#result;
  }

  /**
   * Call with each event right after `projector` folded it, in log order from the first event.
   * Checks the checkpoint when `event` is the one it stands at.
   */
  observe(event: DurableEventEnvelope, projector: DurableSessionProjector): void {
    const saved = this.checkpoint;
    if (this.#result !== null || saved === null) return;
    this.#digest = chainDigest(this.#digest, event);
    this.#index.observe([event]);
    if (event.sequence === saved.sequence) this.#result = this.#check(saved, event, projector);
  }

  /**
   * Folds `events` (the next ones of the log, in order) into `projector` and observes them: the
   * events up to the checkpoint's sequence in one `apply`, then the check, then the rest. For a
   * caller that folds whole pages; throws what the projector throws.
   */
  fold(events: readonly DurableEventEnvelope[], projector: DurableSessionProjector): void {
    if (this.#result !== null || this.checkpoint === null) {
      projector.apply(events);
      return;
    }
    const split = events.findIndex((event) => event.sequence > this.sequence);
    const upTo = split === -1 ? events : events.slice(0, split);
    projector.apply(upTo);
    for (const event of upTo) this.observe(event, projector);
    if (split !== -1) projector.apply(events.slice(split));
  }

  /**
   * The result after the whole log was folded: a checkpoint beyond the head is discarded on open,
   * and was written from events the log no longer holds.
   */
  finish(head: number): CheckpointAuditResult {
    if (this.#result !== null) return this.#result;
    const sequence = this.sequence;
    const removed = head + 1 === sequence ? `event ${sequence} was` : `events ${head + 1}-${sequence} were`;
    return {
      sequence,
      status: 'discarded',
      defects: [`the log ends at sequence ${head}, but the checkpoint was written after event ${sequence}: ${removed} removed (or the log is an older copy)`],
      notes: [`the stored checkpoint stands at sequence ${sequence}, beyond the head (${head}); an open discards it`],
    };
  }

  #check(saved: DecodedCheckpoint, event: DurableEventEnvelope, projector: DurableSessionProjector): CheckpointAuditResult {
    const sequence = saved.sequence;
    if (event.eventId !== saved.eventId || anchorOf(event) !== saved.anchor) {
      const how =
        event.eventId === saved.eventId
          ? `event ${sequence} (${event.eventId}) was changed after the checkpoint was written`
          : `event ${sequence} is ${event.eventId}, not ${saved.eventId}: events were added, removed or replaced at or before sequence ${sequence}`;
      return {
        sequence,
        status: 'discarded',
        defects: [`the log is not the one the checkpoint was written from: ${how}`],
        notes: [`the stored checkpoint was written for another event at sequence ${sequence}; an open discards it (replaced log) and rebuilds`],
      };
    }
    const defects: string[] = [];
    const notes: string[] = [];
    if (this.#digest.h1 !== saved.digest.h1 || this.#digest.h2 !== saved.digest.h2) {
      defects.push(
        `events 1-${sequence} are not the ones the checkpoint was written from (digest mismatch): one of them was changed, added, removed or reordered, though event ${sequence} is unchanged, so opens use a projection of the old log`,
      );
    }
    const { state, ids } = projector.checkpointState();
    if (asStored(state) !== asStored(saved.state)) {
      defects.push(`the checkpoint's fold state at sequence ${sequence} differs from a fold of the log from the first event`);
    }
    const kept = saved.commands.ranges.length;
    const fresh = this.#index.toCheckpoint(kept);
    const spell = (commands: typeof fresh): string =>
      asStored({
        ranges: commands.ranges.map((r) => [r.commandId, r.firstSequence, r.lastSequence, r.eventCount, r.contiguous]),
        lastCommandId: commands.lastCommandId ?? null,
        lastSequence: commands.lastSequence,
      });
    if (spell(fresh) !== spell(saved.commands)) {
      defects.push(`the checkpoint's command index at sequence ${sequence} (its last ${kept} commands) differs from the log's`);
    }
    let missing = 0;
    let example: string | undefined;
    for (const key of ids.exactKeys()) {
      if (saved.keys.mightContain(key)) continue;
      missing += 1;
      example ??= key;
    }
    if (missing > 0) {
      defects.push(`the checkpoint's ID filter at sequence ${sequence} lacks ${missing} ID(s) the log used before it (for example ${String(example)}): a reuse of them would go unnoticed`);
    } else if (saved.keys.size !== ids.size) {
      notes.push(`the checkpoint's ID filter holds ${saved.keys.size} hashes for ${ids.size} IDs: extra hashes only cause needless full folds`);
    }
    return { sequence, status: defects.length === 0 ? 'matches' : 'wrong', defects, notes };
  }
}

/**
 * Reads the whole log of `sessionId` from the first event, folds it, and audits the stored
 * checkpoint on the way (`null` when the store keeps none). A log the projector refuses before the
 * checkpoint's sequence throws that error; `verify` is the caller that reports defects by place.
 */
export async function auditStoredCheckpoint(store: DurableEventStore, sessionId: SessionId, pageSize = 1000): Promise<CheckpointAuditResult | null> {
  const audit = await CheckpointAudit.read(store, sessionId);
  if (audit === null) return null;
  const projector = new DurableSessionProjector({ sessionId });
  let head = 0;
  while (audit.result === null) {
    const page = await store.read(sessionId, { ...(head === 0 ? {} : { after: EventSequence(head) }), limit: pageSize });
    for (const event of page.events) {
      if (audit.result !== null) break;
      projector.apply([event]);
      audit.observe(event, projector);
      head = event.sequence;
    }
    if (!page.hasMore || page.events.length === 0) break;
  }
  return audit.finish(head);
}
