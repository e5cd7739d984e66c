/**
 * `watch` and `watchDurability` of the PostgreSQL store: this store's listeners per session, the
 * {@link WatchHub} that hears other processes' writes (LISTEN, else polling the heads), and the
 * notices of this store's own commits (local listeners at once, other processes through NOTIFY,
 * batched per microtask).
 */
import type { DurabilityListener } from '../../core/durability/record-contract.js';
import type { DurableAppendListener } from '../../core/store.js';
import type { EventSequence, SessionId } from '../../protocol/ids.js';
import type { PostgresConnection } from './connection.js';
import { notifyStatement, type PostgresStatements } from './statements.js';
import { WatchHub, noticePayload, type NoticeKind, type WatchHubOptions, type WatchMode } from './watch-hub.js';

/** The listeners of one store and the hub that feeds them. */
export class PostgresWatchers {
  readonly #watchers = { e: new Map<string, Set<DurableAppendListener>>(), d: new Map<string, Set<DurabilityListener>>() };
  readonly #hub: WatchHub;
  #pendingNotices: string[] = [];

  constructor(
    private readonly connection: PostgresConnection,
    sql: PostgresStatements,
    private readonly channel: string,
    private readonly notify: boolean,
    hub: Omit<WatchHubOptions, 'channel'>,
  ) {
    this.#hub = new WatchHub(
      {
        readHeads: async (sessionIds) => {
          const rows = await this.connection.query<{ session_id: string; head: string; ledger_head: string }>(sql.readHeads, [sessionIds]);
          return new Map(rows.map((row) => [row.session_id, { e: Number(row.head), d: Number(row.ledger_head) }]));
        },
        sendProbe: async (payload) => {
          await this.connection.query(notifyStatement(this.channel, [payload]), []);
        },
        deliver: (kind, sessionId, lastSequence) => this.#deliver(kind, sessionId, lastSequence),
        watched: (kind) => [...this.#watchers[kind].keys()],
      },
      { ...hub, channel },
    );
  }

  /** How this store currently learns about other processes' writes (`idle` while nobody watches). */
  get mode(): WatchMode {
    return this.#hub.mode;
  }

  close(): Promise<void> {
    return this.#hub.close();
  }

  add(kind: NoticeKind, sessionId: string, listener: DurableAppendListener & DurabilityListener): () => void {
    const map = this.#watchers[kind] as Map<string, Set<typeof listener>>;
    let set = map.get(sessionId);
    if (set === undefined) {
      set = new Set();
      map.set(sessionId, set);
    }
    set.add(listener);
    this.#hub.changed();
    return () => {
      const current = map.get(sessionId);
      if (current === undefined || !current.delete(listener)) return;
      if (current.size === 0) map.delete(sessionId);
      this.#hub.changed();
    };
  }

  #deliver(kind: NoticeKind, sessionId: string, lastSequence: number): void {
    const listeners = this.#watchers[kind].get(sessionId);
    if (listeners === undefined) return;
    // SAFETY: keys were validated by `watch` / `watchDurability`.
    const notice = { sessionId: sessionId as SessionId, lastSequence: lastSequence as EventSequence };
    for (const listener of [...listeners]) {
      queueMicrotask(() => {
        try {
          listener(notice);
        } catch {
          // A notice is a hint; a throwing listener must not reach anyone else.
        }
      });
    }
  }

  /** After a commit: tell local watchers at once, and other processes through NOTIFY. */
  committed(kind: NoticeKind, sessionId: string, sequence: number): void {
    if (this.#watchers[kind].has(sessionId) && this.#hub.report(kind, sessionId, sequence)) this.#deliver(kind, sessionId, sequence);
    if (!this.notify) return;
    this.#pendingNotices.push(noticePayload(kind, sessionId, sequence));
    if (this.#pendingNotices.length === 1) {
      queueMicrotask(() => {
        const payloads = this.#pendingNotices;
        this.#pendingNotices = [];
        if (this.connection.closed) return;
        // A lost notice only delays watchers that poll or reconnect; never fail the write for it.
        this.connection.query(notifyStatement(this.channel, payloads), []).catch(() => undefined);
      });
    }
  }
}
