/**
 * Cross-process notices for `watch` / `watchDurability`: LISTEN/NOTIFY as a wake-up hint, polling
 * as the fallback.
 *
 * 1. After every committed append or created durability record, the writing store sends
 *    `NOTIFY` on the schema's channel (coalesced per microtask into one short statement of its
 *    own, after the write committed: a NOTIFY inside the write's transaction would take
 *    PostgreSQL's notify-queue lock until that commit's WAL flush and serialize every writer).
 *    Payload: `e<sequence>:<session>` or `d<sequence>:<session>`.
 * 2. While someone watches, the hub keeps ONE listening connection (a plain client outside the
 *    pool; give `listenConnectionString` a direct address when the pool goes through a
 *    transaction-mode pooler, which cannot carry LISTEN). When it connects it runs a self-test:
 *    it notifies a random probe and waits for it to come back. If the probe does not arrive
 *    within `probeTimeoutMs`, or the connection fails, the hub polls instead: every
 *    `pollIntervalMs` it reads the heads of the watched sessions (one query) and reports
 *    changes. A broken listening connection is retried in the background while polling.
 *    While notifications flow, the watched heads are still read every `safetyPollMs` (10x the
 *    polling interval): a writer that died between its commit and its NOTIFY never sends one.
 * 3. Notices are hints: readers re-read from their cursor. The hub reports a session's head only
 *    when it is higher than the last one it reported (a writer's own notice and its echo from
 *    PostgreSQL collapse into one). After (re)connecting, and on the first poll, it reads the
 *    watched heads once, so an append that landed while nobody listened is still reported.
 */
import type { PgClient, PgClientConfig, PgModule } from './driver.js';

/** Which log a notice is about: `e` events, `d` durability records. */
export type NoticeKind = 'e' | 'd';

/** How the hub currently learns about foreign writes. */
export type WatchMode = 'idle' | 'starting' | 'notify' | 'poll';

/** What the hub needs from its store. */
export interface WatchHubHost {
  /** Heads of `sessionIds` (missing sessions are absent from the map). */
  readHeads(sessionIds: string[]): Promise<Map<string, { e: number; d: number }>>;
  /** Sends one probe notification (through the pool). */
  sendProbe(payload: string): Promise<void>;
  /** Delivers a notice to the store's listeners of `kind`. */
  deliver(kind: NoticeKind, sessionId: string, lastSequence: number): void;
  /** Sessions currently watched, per kind. */
  watched(kind: NoticeKind): string[];
}

/** Options of {@link WatchHub}. */
export interface WatchHubOptions {
  pg: PgModule;
  listenConfig: PgClientConfig;
  channel: string;
  pollIntervalMs: number;
  probeTimeoutMs: number;
  /** Delay before the listening connection is tried again after a failure. */
  retryMs: number;
  /** Interval of the safety-net poll while notifications flow. */
  safetyPollMs: number;
}

/** Parses a notice payload; `undefined` for anything else (such as a probe). */
export function parseNoticePayload(payload: string): { kind: NoticeKind; sessionId: string; sequence: number } | undefined {
  const kind = payload[0];
  if (kind !== 'e' && kind !== 'd') return undefined;
  const colon = payload.indexOf(':');
  if (colon < 2) return undefined;
  const sequence = Number(payload.slice(1, colon));
  if (!Number.isSafeInteger(sequence) || sequence < 1) return undefined;
  return { kind, sessionId: payload.slice(colon + 1), sequence };
}

/** Formats a notice payload (see {@link parseNoticePayload}). */
export function noticePayload(kind: NoticeKind, sessionId: string, sequence: number): string {
  return `${kind}${sequence}:${sessionId}`;
}

/** One listening connection (or a poll loop) shared by every watcher of a store. */
export class WatchHub {
  readonly #options: WatchHubOptions;
  readonly #host: WatchHubHost;
  /** Highest sequence reported per kind and session. */
  readonly #reported = { e: new Map<string, number>(), d: new Map<string, number>() };
  #mode: WatchMode = 'idle';
  #client: PgClient | undefined;
  #pollTimer: ReturnType<typeof setInterval> | undefined;
  #pollInterval: number | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** Bumped on every start/stop, so that late callbacks of an older connection do nothing. */
  #generation = 0;
  #probeWaiter: { token: string; resolve: () => void } | undefined;
  #closed = false;

  constructor(host: WatchHubHost, options: WatchHubOptions) {
    this.#host = host;
    this.#options = options;
  }

  /** How foreign writes are currently noticed. */
  get mode(): WatchMode {
    return this.#mode;
  }

  /** Records that this process itself reported `sequence`; returns true when it is new. */
  report(kind: NoticeKind, sessionId: string, sequence: number): boolean {
    const map = this.#reported[kind];
    const known = map.get(sessionId);
    if (known !== undefined && known >= sequence) return false;
    map.set(sessionId, sequence);
    return true;
  }

  /** Forget what was reported for sessions nobody watches any more. */
  #prune(): void {
    for (const kind of ['e', 'd'] as const) {
      const watched = new Set(this.#host.watched(kind));
      for (const sessionId of [...this.#reported[kind].keys()]) {
        if (!watched.has(sessionId)) this.#reported[kind].delete(sessionId);
      }
    }
  }

  /** Call whenever the set of watched sessions changed: starts or stops listening. */
  changed(): void {
    if (this.#closed) return;
    this.#prune();
    const anyone = this.#host.watched('e').length > 0 || this.#host.watched('d').length > 0;
    if (anyone && this.#mode === 'idle') this.#start();
    if (!anyone && this.#mode !== 'idle') this.#stop();
  }

  /** Stops listening and polling for good. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#stop();
  }

  #start(): void {
    this.#mode = 'starting';
    const generation = ++this.#generation;
    void this.#connect(generation);
  }

  async #stop(): Promise<void> {
    this.#generation++;
    this.#mode = 'idle';
    this.#stopPolling();
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined) await client.end().catch(() => undefined);
  }

  async #connect(generation: number): Promise<void> {
    const { pg, listenConfig, channel, probeTimeoutMs } = this.#options;
    const client = new pg.Client(listenConfig);
    client.on('error', () => this.#lost(generation, client));
    client.on('end', () => this.#lost(generation, client));
    client.on('notification', (message) => {
      if (generation !== this.#generation) return;
      const payload = message.payload ?? '';
      const waiter = this.#probeWaiter;
      if (waiter !== undefined && payload === `probe:${waiter.token}`) {
        waiter.resolve();
        return;
      }
      const notice = parseNoticePayload(payload);
      if (notice !== undefined) this.#offer(notice.kind, notice.sessionId, notice.sequence);
    });
    try {
      await client.connect();
      if (generation !== this.#generation) {
        await client.end().catch(() => undefined);
        return;
      }
      this.#client = client;
      await client.query(`LISTEN "${channel}"`);
      const arrived = await this.#probe(probeTimeoutMs);
      if (generation !== this.#generation) return;
      if (!arrived) throw new Error('the probe notification did not arrive');
      this.#stopPolling();
      this.#mode = 'notify';
      // A safety net, not the mechanism: a writer that died between its commit and its NOTIFY
      // never sends one, so even while notifications flow the watched heads are read now and then.
      this.#startPolling(this.#options.safetyPollMs);
    } catch {
      if (generation !== this.#generation) return;
      if (this.#client === client) this.#client = undefined;
      await client.end().catch(() => undefined);
      this.#fallBack(generation);
    }
  }

  /** Sends a probe and waits for it on the listening connection. */
  #probe(timeoutMs: number): Promise<boolean> {
    const token = Math.random().toString(36).slice(2);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.#probeWaiter = undefined;
        resolve(false);
      }, timeoutMs);
      this.#probeWaiter = {
        token,
        resolve: () => {
          clearTimeout(timer);
          this.#probeWaiter = undefined;
          resolve(true);
        },
      };
      this.#host.sendProbe(`probe:${token}`).catch(() => undefined);
    });
  }

  #lost(generation: number, client: PgClient): void {
    if (generation !== this.#generation || this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => undefined);
    this.#fallBack(generation);
  }

  /** Polls, and tries the listening connection again later. */
  #fallBack(generation: number): void {
    if (this.#closed || generation !== this.#generation) return;
    this.#mode = 'poll';
    if (this.#pollInterval !== this.#options.pollIntervalMs) this.#startPolling();
    if (this.#retryTimer === undefined) {
      this.#retryTimer = setTimeout(() => {
        this.#retryTimer = undefined;
        if (this.#closed || generation !== this.#generation) return;
        const next = ++this.#generation;
        void this.#connect(next);
      }, this.#options.retryMs);
      this.#retryTimer.unref?.();
    }
  }

  #startPolling(intervalMs = this.#options.pollIntervalMs): void {
    this.#stopPolling();
    void this.#catchUp();
    this.#pollInterval = intervalMs;
    this.#pollTimer = setInterval(() => void this.#catchUp(), intervalMs);
    this.#pollTimer.unref?.();
  }

  #stopPolling(): void {
    if (this.#pollTimer !== undefined) clearInterval(this.#pollTimer);
    this.#pollTimer = undefined;
    this.#pollInterval = undefined;
  }

  /** Reads the watched heads once and reports the ones that moved. */
  async #catchUp(): Promise<void> {
    const sessions = [...new Set([...this.#host.watched('e'), ...this.#host.watched('d')])];
    if (sessions.length === 0) return;
    let heads: Map<string, { e: number; d: number }>;
    try {
      heads = await this.#host.readHeads(sessions);
    } catch {
      return;
    }
    for (const [sessionId, head] of heads) {
      if (head.e > 0) this.#offer('e', sessionId, head.e);
      if (head.d > 0) this.#offer('d', sessionId, head.d);
    }
  }

  #offer(kind: NoticeKind, sessionId: string, sequence: number): void {
    if (!this.#host.watched(kind).includes(sessionId)) return;
    if (this.report(kind, sessionId, sequence)) this.#host.deliver(kind, sessionId, sequence);
  }
}
