/**
 * `append`: the core engine plans the batch on the session's state (`planAppend`), then one
 * conditional statement inserts the events (with their commands and per-event digests) and moves
 * the head, only if the row still holds that state (see `session-writes.ts`).
 */
import { throwIfAborted } from '../../core/abort.js';
import { eventDigest } from '../../core/checkpoint/event-digest.js';
import { checkSessionId, planAppend, validateDraftBatch } from '../../core/log-engine.js';
import type { DurableAppendOptions, DurableAppendResult, StoreTestHooks } from '../../core/store.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import type { DurableEventDraft } from '../../protocol/events.js';
import { EventSequence, type SessionId } from '../../protocol/ids.js';
import type { SessionWrites } from './session-writes.js';
import type { PostgresStatements } from './statements.js';
import type { PostgresWatchers } from './watchers.js';

/** The appends of one store. */
export class PostgresAppends {
  constructor(
    private readonly writes: SessionWrites,
    private readonly sql: PostgresStatements,
    private readonly watchers: PostgresWatchers,
    private readonly clock: () => number,
    private readonly hooks: StoreTestHooks,
  ) {}

  async append(sessionId: SessionId, drafts: readonly DurableEventDraft[], options?: DurableAppendOptions): Promise<DurableAppendResult> {
    const id = checkSessionId(sessionId);
    const valid = validateDraftBatch(drafts);
    throwIfAborted(options?.signal);
    const result = await this.writes.serialize(id, () => this.#append(id, valid, options));
    this.watchers.committed('e', id, result.lastSequence);
    return result;
  }

  #beforeCommit(sessionId: SessionId): void {
    try {
      this.hooks.beforeCommit?.(sessionId);
    } catch (error) {
      throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', 'commit failed before anything was written', { cause: error });
    }
  }

  async #append(id: SessionId, valid: DurableEventDraft[], options: DurableAppendOptions | undefined): Promise<DurableAppendResult> {
    const signal = options?.signal;
    let encodings: string[] = [];
    return this.writes.write<DurableAppendResult>(
      id,
      signal,
      'append',
      (state) => {
        encodings = [];
        const planned = planAppend({
          sessionId: id,
          drafts: valid,
          options,
          head: state.head === 0 ? null : EventSequence(state.head),
          lease: state.lease,
          nowMs: this.clock(),
          encodings,
        });
        return planned;
      },
      async (run, state, planned) => {
        this.#beforeCommit(id);
        const commandIds = planned.events.map((event) => event.commandId ?? null);
        const { rowCount } = await run(state.exists ? this.sql.appendExisting : this.sql.appendNew, [
          id,
          state.head,
          planned.lastSequence,
          state.leaseVersion,
          encodings,
          commandIds,
          planned.events.map(eventDigest),
        ]);
        if (rowCount === 0) return null;
        if (rowCount !== planned.events.length) throw new Error(`inserted ${rowCount} of ${planned.events.length} events`);
        return { ...state, exists: true, head: planned.lastSequence };
      },
    );
  }
}
