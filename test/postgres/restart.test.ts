/**
 * The server restarts under load, with the same store object (no client restart):
 * - journals on several sessions commit commands in a loop while the server goes through a fast
 *   shutdown and then an immediate (crash-like) one, each followed by a start;
 * - a failed commit is resubmitted as the same command until the journal resolves it: committed,
 *   or reconciled (found in the log after an unknown outcome); when the journal proves it absent
 *   after the server is back, a new journal commits it again (the documented higher-level decision);
 * - at the end every acknowledged command is in its log exactly once, with its events contiguous,
 *   and a watcher on a second store (its LISTEN connection lost twice) still hears the last append.
 * This file starts its own server: restarting the shared one would disturb the other files.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lifecycleDrafts } from '../../src/conformance/checks-journal.js';
import { markerDraft } from '../../src/conformance/fixtures.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import type { DurableJournalCommand } from '../../src/core/journal/journal-options.js';
import { PostgresDurableEventStore } from '../../src/postgres.js';
import { isDurableCommandOutcomeUnknownError } from '../../src/protocol/errors.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { CommandId, SessionId, type EventId } from '../../src/protocol/ids.js';
import { readAll } from './helpers.js';
import { startPostgres, type PostgresServer } from './server.js';

let server: PostgresServer;
let store: PostgresDurableEventStore;
let watcherStore: PostgresDurableEventStore;

beforeAll(async () => {
  server = await startPostgres();
  store = await PostgresDurableEventStore.open({ connectionString: server.url, poolSize: 4 });
  watcherStore = await PostgresDurableEventStore.open({ connectionString: server.url, poolSize: 2, pollIntervalMs: 100 });
});
afterAll(async () => {
  await store?.close();
  await watcherStore?.close();
  await server?.stop();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Outcome {
  acknowledged: Map<string, number>;
  failures: number;
  reconciled: number;
  recommitted: number;
}

/** Commits `commands()` one after another, resolving every failure before the next command. */
async function drive(sessionId: SessionId, stop: () => boolean, outcome: Outcome): Promise<void> {
  let journal: DurableSessionJournal | undefined;
  const openJournal = async (): Promise<DurableSessionJournal> => {
    for (;;) {
      try {
        return await DurableSessionJournal.open(store, sessionId, { storeTimeoutMs: 5000 });
      } catch {
        outcome.failures++;
        await sleep(50);
      }
    }
  };
  const commit = async (command: DurableJournalCommand): Promise<DurableEventEnvelope[]> => {
    for (;;) {
      journal ??= await openJournal();
      try {
        const result = await journal.commit(command);
        if (result.status === 'reconciled') outcome.reconciled++;
        outcome.acknowledged.set(command.commandId, command.events.length);
        return result.events;
      } catch (error) {
        outcome.failures++;
        if (isDurableCommandOutcomeUnknownError(error)) {
          const details = error.details as { failure?: unknown; reloadFailure?: unknown } | undefined;
          if (details?.failure === null && details.reloadFailure === null) {
            // The log was read and the command is absent: with the server back, it was not
            // written. Decide at the higher level: a fresh journal commits it again.
            journal = undefined;
            outcome.recommitted++;
          }
        } else {
          journal = undefined;
        }
        await sleep(50);
      }
    }
  };
  await commit({ commandId: CommandId('create'), events: [lifecycleDrafts.sessionCreated()] });
  for (let i = 0; !stop(); i++) {
    const accepted = await commit({
      commandId: CommandId(`accept-${i}`),
      events: [lifecycleDrafts.requestAccepted(`r${i}`), lifecycleDrafts.requestStarted(`r${i}`)],
    });
    const started = accepted[accepted.length - 1]?.eventId as EventId;
    await commit({ commandId: CommandId(`complete-${i}`), events: [lifecycleDrafts.requestCompleted(`r${i}`, started)] });
  }
}

describe('PostgreSQL server restarts under load', () => {
  it('loses no acknowledged commit, reconciles unknown outcomes and recovers without a client restart', async () => {
    const sessions = Array.from({ length: 4 }, (_, i) => SessionId(`restart-${i}`));
    const outcomes = sessions.map(() => ({ acknowledged: new Map<string, number>(), failures: 0, reconciled: 0, recommitted: 0 }));
    const heard: number[] = [];
    const stopWatching = watcherStore.watch(sessions[0] as SessionId, (notice) => heard.push(notice.lastSequence));
    let stopping = false;
    const load = sessions.map((sessionId, i) => drive(sessionId, () => stopping, outcomes[i] as Outcome));

    await sleep(1500);
    await server.shutdown('fast');
    await sleep(500);
    await server.start();
    await sleep(1500);
    await server.shutdown('immediate');
    await sleep(500);
    await server.start();
    await sleep(1500);
    stopping = true;
    await Promise.all(load);

    const totalFailures = outcomes.reduce((sum, o) => sum + o.failures, 0);
    expect(totalFailures).toBeGreaterThan(0);
    for (const [index, sessionId] of sessions.entries()) {
      const outcome = outcomes[index] as Outcome;
      const events = await readAll(store, sessionId);
      events.forEach((event, position) => expect(event.sequence).toBe(position + 1));
      const counts = new Map<string, number>();
      for (const event of events) counts.set(String(event.commandId), (counts.get(String(event.commandId)) ?? 0) + 1);
      // Every acknowledged command exactly once (its event count), and nothing unacknowledged but the last in flight.
      for (const [commandId, eventCount] of outcome.acknowledged) expect(counts.get(commandId), commandId).toBe(eventCount);
      for (const commandId of counts.keys()) expect(outcome.acknowledged.has(commandId), `${commandId} acknowledged`).toBe(true);
      expect(outcome.acknowledged.size).toBeGreaterThan(2);
    }
    // The watcher's store lost its LISTEN connection twice and still hears appends.
    const last = await store.append(sessions[0] as SessionId, [markerDraft('after the restarts')]);
    const deadline = Date.now() + 30_000;
    while (!heard.includes(last.lastSequence) && Date.now() < deadline) await sleep(50);
    stopWatching();
    expect(heard).toContain(last.lastSequence);
  });
});
