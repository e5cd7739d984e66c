/**
 * An append whose reply is lost: a TCP proxy between the store and the server forwards the write
 * to PostgreSQL (which commits it) and then cuts the connection instead of forwarding the reply.
 * The store must report DURABLE_EVENT_WRITE_FAILED (outcome unknown, never a refusal), and the
 * journal must resolve the same situation by reading: its commit comes back `reconciled`, and the
 * command is in the log exactly once. An append whose first read loses its connection is
 * DURABLE_EVENT_WRITE_FAILED too (nothing written). Also: an aborted signal cancels a statement
 * that waits on a row lock, nothing is written, and the append rejects with the signal's reason.
 */
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lifecycleDrafts } from '../../src/conformance/checks-journal.js';
import { markerDraft } from '../../src/conformance/fixtures.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { PostgresDurableEventStore } from '../../src/postgres.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';
import { dropSchema, freshSchema, postgresUrl, readAll } from './helpers.js';

const url = postgresUrl();
const schema = freshSchema('lost_reply');
const target = new URL(url);
let proxy: net.Server;
let proxyPort = 0;
/** When set, the next reply from the server is swallowed and its connection cut. */
let cutNextReply = false;
const sockets = new Set<net.Socket>();
let store: PostgresDurableEventStore;

beforeAll(async () => {
  proxy = net.createServer((client) => {
    const server = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client);
    sockets.add(server);
    client.on('error', () => undefined);
    server.on('error', () => undefined);
    client.on('data', (chunk) => server.write(chunk));
    server.on('data', (chunk) => {
      if (cutNextReply) {
        cutNextReply = false;
        client.destroy();
        server.destroy();
        return;
      }
      client.write(chunk);
    });
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()));
  const address = proxy.address();
  proxyPort = typeof address === 'object' && address !== null ? address.port : 0;
  const viaProxy = new URL(url);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxyPort);
  // Unprepared statements: the mode for transaction-mode poolers without prepared-statement support.
  store = await PostgresDurableEventStore.open({ connectionString: viaProxy.toString(), schema, poolSize: 2, notify: false, preparedStatements: false });
});
afterAll(async () => {
  await store?.close();
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => proxy.close(() => resolve()));
  await dropSchema(url, schema);
});

describe('PostgreSQL: unknown outcomes and cancellation', () => {
  it('reports a committed append whose reply was lost as DURABLE_EVENT_WRITE_FAILED', async () => {
    const sessionId = SessionId('lost-reply-store');
    await store.append(sessionId, [markerDraft('first')], { expectedLastSequence: null });
    cutNextReply = true;
    await expect(store.append(sessionId, [markerDraft('second')])).rejects.toMatchObject({ code: 'DURABLE_EVENT_WRITE_FAILED' });
    expect(cutNextReply).toBe(false);
    const events = await readAll(store, sessionId);
    expect(events.map((event) => (event.data as { output: string }).output)).toEqual(['first', 'second']);
    // The store recovers on its own: the next append continues the log.
    const next = await store.append(sessionId, [markerDraft('third')], { expectedLastSequence: events[1]?.sequence ?? null });
    expect(next.lastSequence).toBe(3);
  });

  it('lets the journal reconcile a command whose reply was lost', async () => {
    const sessionId = SessionId('lost-reply-journal');
    const journal = await DurableSessionJournal.open(store, sessionId);
    await journal.commit({ commandId: CommandId('create'), events: [lifecycleDrafts.sessionCreated()] });
    cutNextReply = true;
    const result = await journal.commit({
      commandId: CommandId('accept-1'),
      events: [lifecycleDrafts.requestAccepted('r1'), lifecycleDrafts.requestStarted('r1')],
    });
    expect(result.status).toBe('reconciled');
    const events = await readAll(store, sessionId);
    expect(events.filter((event) => event.commandId === 'accept-1')).toHaveLength(2);
    expect(events).toHaveLength(3);
    expect(await store.findCommand(sessionId, CommandId('accept-1'))).toEqual({ firstSequence: 2, lastSequence: 3, eventCount: 2 });
  });

  it('reports an append whose state read lost its connection as DURABLE_EVENT_WRITE_FAILED, nothing written', async () => {
    // One idle connection in the pool, so the append's first statement (the state read of a
    // session this store has not seen) is the next thing the proxy answers.
    await store.getHeadSequence(SessionId('lost-read-warm-up'));
    const sessionId = SessionId('lost-read-append');
    cutNextReply = true;
    const error = await store.append(sessionId, [markerDraft('first')], { expectedLastSequence: null }).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(cutNextReply).toBe(false);
    expect(error).toMatchObject({ code: 'DURABLE_EVENT_WRITE_FAILED', message: expect.stringContaining('nothing was written') });
    expect((error as Error).cause).toBeInstanceOf(Error);
    expect(await store.getHeadSequence(sessionId)).toBe(null);
  });

  /**
   * Appends while another transaction holds the session's row lock, aborts once the statement
   * waits for it, and returns what the append rejected with.
   */
  async function abortWhileLocked(sessionId: SessionId, abort: (controller: AbortController) => void): Promise<unknown> {
    await store.append(sessionId, [markerDraft('first')], { expectedLastSequence: null });
    const blocker = new pg.Client({ connectionString: url });
    blocker.on('error', () => undefined);
    await blocker.connect();
    let outcome: unknown;
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM "${schema}".sessions WHERE session_id = $1 FOR UPDATE`, [sessionId]);
      const controller = new AbortController();
      const append = store.append(sessionId, [markerDraft('blocked')], { signal: controller.signal });
      const settled = append.then(
        () => 'resolved',
        (error: unknown) => error,
      );
      // The statement is now waiting for the row lock on the server.
      for (let i = 0; i < 100; i++) {
        const waiting = await blocker.query<{ n: string }>(
          "SELECT count(*)::text AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%sessions%'",
        );
        if (waiting.rows[0]?.n !== '0') break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      abort(controller);
      outcome = await settled;
      // The cancel request reached the server: no statement is left waiting for the lock.
      let left = '1';
      for (let i = 0; i < 100 && left !== '0'; i++) {
        const waiting = await blocker.query<{ n: string }>(
          "SELECT count(*)::text AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%sessions%'",
        );
        left = waiting.rows[0]?.n ?? '0';
        if (left !== '0') await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(left).toBe('0');
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
    }
    expect(await store.getHeadSequence(sessionId)).toBe(1);
    return outcome;
  }

  it('cancels a statement waiting on a row lock when the signal aborts, writing nothing', async () => {
    const outcome = await abortWhileLocked(SessionId('cancelled-append'), (controller) => controller.abort());
    expect(outcome).toMatchObject({ name: 'AbortError' });
  });

  it("rejects with the signal's reason when it is not an AbortError (a timeout, an Error)", async () => {
    const timeout = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    expect(await abortWhileLocked(SessionId('timed-out-append'), (controller) => controller.abort(timeout))).toBe(timeout);
    const reason = new Error('x');
    expect(await abortWhileLocked(SessionId('errored-append'), (controller) => controller.abort(reason))).toBe(reason);
  });
});
