/**
 * `agent-ledger verify <worker URL> <session>` (the CLI's `run()` in this process) checks every event
 * the Worker serves against the per-event digest its Durable Object stored with the row
 * (`GET /v1/sessions/{sessionId}/digests`), not only the events up to the checkpoint.
 *
 * The session: 33 events with the projection checkpoint after event 28 (`seedPastCheckpoint`),
 * so events 29-33 are beyond the checkpoint's digest. The clean run goes to the product Worker
 * the `http` project shares; the edit needs the fixture Worker (test/workers/fixtures), whose
 * test-only route `POST .../test/edit-event` rewrites one stored row around the store, keeping
 * its digest, as a hand editing the object's database would.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDurableEventStore } from '../../src/client.js';
import type { DurableEventEnvelope } from '../../src/protocol/events.js';
import { EventSequence, SessionId } from '../../src/protocol/ids.js';
import { runCliInProcess } from '../cli/helpers.js';
import { EARLY_CHECKPOINT, EDITABLE_EVENTS, seedPastCheckpoint } from '../cli/verify-edits.js';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

const FIXTURE_CONFIG = fileURLToPath(new URL('../workers/fixtures/wrangler.agents.toml', import.meta.url));

/** The part of `verify --json` these tests read. */
interface VerifyJson {
  ok: boolean;
  sessions: Array<{
    sessionId: string;
    events: number;
    defects: Array<{ where: string; message: string; sequence?: number }>;
    notes: string[];
    checkpoint?: { sequence: number; status: string };
    eventDigests?: { checked: number; missing: number };
  }>;
}

let product: LocalWorker;
let fixture: LocalWorker;

beforeAll(async () => {
  [product, fixture] = await Promise.all([startLocalWorker(), startLocalWorker({ config: FIXTURE_CONFIG })]);
}, 120_000);

afterAll(async () => {
  await Promise.all([product?.stop(), fixture?.stop()]);
});

const freshSession = (label: string): SessionId => SessionId(`verify-http-${label}-${crypto.randomUUID()}`);

/** Runs `verify --json` against `worker` with its admin token. */
async function verifyJson(worker: LocalWorker, sessionId: SessionId): Promise<{ code: number | null; report: VerifyJson; output: string }> {
  const run = await runCliInProcess(['verify', worker.url.href, sessionId, '--json'], { AGENT_LEDGER_TOKEN: worker.adminToken });
  return { code: run.code, report: JSON.parse(run.stdout) as VerifyJson, output: run.stdout + run.stderr };
}

describe('verify over a Worker URL checks every event against its stored digest', () => {
  it('a clean session with events after the checkpoint: passes, every event digest-checked', async () => {
    const sessionId = freshSession('clean');
    const store = new HttpDurableEventStore({ baseUrl: product.url, token: product.adminToken });
    await seedPastCheckpoint(store, sessionId, true);

    const { code, report, output } = await verifyJson(product, sessionId);
    expect(code, output).toBe(0);
    expect(report.ok).toBe(true);
    const [session] = report.sessions;
    expect(session?.events).toBe(EDITABLE_EVENTS);
    expect(session?.checkpoint).toEqual({ sequence: EARLY_CHECKPOINT, status: 'matches' });
    expect(session?.eventDigests).toEqual({ checked: EDITABLE_EVENTS, missing: 0 });
    expect(session?.notes).toContain(`per-event digests match for events 1-${EDITABLE_EVENTS}`);

    const text = await runCliInProcess(['verify', product.url.href, sessionId], { AGENT_LEDGER_TOKEN: product.adminToken });
    expect(text.code, text.stdout + text.stderr).toBe(0);
    expect(text.stdout).toContain(`ok      ${sessionId}: ${EDITABLE_EVENTS} events`);
  }, 120_000);

  it('an event payload edited in the stored row after the checkpoint: exit 2 naming its sequence', async () => {
    const sessionId = freshSession('edited');
    const store = new HttpDurableEventStore({ baseUrl: fixture.url, token: fixture.adminToken });
    await seedPastCheckpoint(store, sessionId, true);
    const before = await verifyJson(fixture, sessionId);
    expect(before.code, before.output).toBe(0);

    // One byte of the input of event 29 (request_accepted), after the checkpoint at 28: only its digest can see it.
    const edited = EARLY_CHECKPOINT + 1;
    const [event] = (await store.read(sessionId, { after: EventSequence(edited - 1), limit: 1 })).events;
    expect(event?.type).toBe('request_accepted');
    const data = event?.data as { input: string };
    const changedEvent = { ...event, data: { ...data, input: `${data.input.slice(0, -1)}X` } } as DurableEventEnvelope;
    const response = await fetch(fixture.href(`/v1/sessions/${sessionId}/test/edit-event`), {
      method: 'POST',
      headers: { authorization: `Bearer ${fixture.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sequence: edited, body: JSON.stringify(changedEvent) }),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    expect(await response.json()).toEqual({ changed: 1 });
    // The Worker serves the edited row.
    expect((await store.read(sessionId, { after: EventSequence(edited - 1), limit: 1 })).events[0]).toEqual(changedEvent);

    const { code, report, output } = await verifyJson(fixture, sessionId);
    expect(code, output).toBe(2);
    expect(report.ok).toBe(false);
    const [session] = report.sessions;
    // The checkpoint, before the edit, still matches: the digest check alone names the event.
    expect(session?.checkpoint).toEqual({ sequence: EARLY_CHECKPOINT, status: 'matches' });
    expect(session?.defects).toEqual([
      { where: `sequence ${edited}`, sequence: edited, message: expect.stringMatching(/^request_accepted is not the event that was appended \(per-event digest mismatch\)/) },
    ]);
    expect(session?.eventDigests).toEqual({ checked: EDITABLE_EVENTS, missing: 0 });

    const text = await runCliInProcess(['verify', fixture.url.href, sessionId], { AGENT_LEDGER_TOKEN: fixture.adminToken });
    expect(text.code).toBe(2);
    expect(text.stdout).toMatch(new RegExp(`sequence ${edited}: request_accepted is not the event that was appended \\(per-event digest mismatch\\)`));
  }, 120_000);
});
