/**
 * The inspection's checkpoint line: `loadInspection` audits the stored projection checkpoint while
 * it folds the whole log (the checks of `verify`), on real memory stores. A checkpoint written by
 * a journal matches; one standing beyond the head, or over another event at its sequence, is
 * discarded; behind a log the projector refuses first it is unchecked. The `wrong` case (a prefix
 * rewritten behind an unchanged checkpoint event) needs a log whose bytes can be edited: it is
 * tested through `agent-ledger inspect` on JSONL files in `test/cli/cli.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { ALL_INSPECTOR_SCOPES } from '../../src/inspector/backend.js';
import { describeCheckpoint, loadInspection, type Inspection } from '../../src/inspector/model/inspection.js';
import { InspectorPage } from '../../src/inspector/page.js';
import { CommandId, RequestId, SessionId, TurnId } from '../../src/protocol/ids.js';
import { appendCycles, cycleDrafts } from '../checkpoint/lifecycle-log.js';

const sessionId = SessionId('inspected');

/** A 31-event session whose journal wrote a checkpoint at sequence 21 (session_created + 4 cycles). */
async function checkpointed(): Promise<MemoryDurableEventStore> {
  const store = new MemoryDurableEventStore();
  await appendCycles(store, sessionId, 0, 0);
  const journal = await DurableSessionJournal.open(store, sessionId, { checkpoints: { everyEvents: 1_000_000 } });
  for (let index = 0; index < 6; index++) {
    const outcome = await journal.commit({ commandId: CommandId(`cycle-${index}`), events: cycleDrafts(index).map(({ commandId: _c, ...draft }) => draft) });
    expect(outcome.status).toBe('committed');
    if (index === 3) expect(await journal.writeCheckpoint()).toBe(true);
  }
  return store;
}

/** Copies the stored checkpoint of `from` into `to` (same session ID). */
async function copyCheckpoint(from: MemoryDurableEventStore, to: MemoryDurableEventStore): Promise<void> {
  const record = await from.readCheckpoint(sessionId);
  expect(record?.sequence).toBe(21);
  if (record !== null) await to.writeCheckpoint(sessionId, record);
}

/** The page's HTML for `inspection` (Hono JSX renders to a string). */
async function render(inspection: Inspection): Promise<string> {
  return String(await InspectorPage({ inspection, scopes: ALL_INSPECTOR_SCOPES, basePath: '/v1/sessions/inspected/inspect' }));
}

describe('loadInspection: the stored checkpoint', () => {
  it('matches a fold of the whole log, with how far behind the head it stands', async () => {
    const store = await checkpointed();
    const inspection = await loadInspection(store, sessionId);
    expect(inspection.headSequence).toBe(31);
    expect(inspection.checkpointSupported).toBe(true);
    expect(inspection.checkpoint).toMatchObject({ sequence: 21, behind: 10, status: 'matches', defects: [] });
    expect(inspection.checkpoint?.bytes).toBeGreaterThan(0);
    expect(describeCheckpoint(inspection)).toMatch(/^at sequence 21, 10 event\(s\) behind the head, \d+ bytes: matches a fold of the whole log$/);
    const html = await render(inspection);
    expect(html).toContain('<dd id="checkpoint" data-status="matches">at sequence 21, 10 event(s) behind the head');
    expect(html).not.toContain('checkpoint-defects');
    // A wrong one (an audit result as the JSONL test in test/cli produces it) is an alert with the remedy.
    const wrong = { ...inspection, checkpoint: { ...(inspection.checkpoint as NonNullable<Inspection['checkpoint']>), status: 'wrong' as const, defects: ['digest mismatch <b>'] } };
    const alert = await render(wrong);
    expect(alert).toContain('data-status="wrong"');
    expect(alert).toMatch(/<p class="error" role="alert" id="checkpoint-defects">[^]*digest mismatch &lt;b&gt;[^]*agent-ledger checkpoint &lt;store&gt; inspected --rebuild/);
  });

  it('says none is stored, and n/a for a store without checkpoints', async () => {
    const store = new MemoryDurableEventStore();
    await appendCycles(store, sessionId, 0, 1);
    const inspection = await loadInspection(store, sessionId);
    expect(inspection.checkpoint).toBeNull();
    expect(describeCheckpoint(inspection)).toBe('none stored (an open folds the whole log)');
    expect(describeCheckpoint({ checkpointSupported: false, checkpoint: null })).toMatch(/^n\/a/);
  });

  it('reports a checkpoint beyond the head, or over another event, as discarded', async () => {
    const source = await checkpointed();
    const shorter = new MemoryDurableEventStore();
    await appendCycles(shorter, sessionId, 0, 2);
    await copyCheckpoint(source, shorter);
    const beyond = await loadInspection(shorter, sessionId);
    expect(beyond.checkpoint).toMatchObject({ sequence: 21, behind: -10, status: 'discarded' });
    expect(beyond.checkpoint?.notes[0]).toMatch(/beyond the head/);
    expect(describeCheckpoint(beyond)).toMatch(/^at sequence 21, beyond the head, \d+ bytes: an open discards it/);

    // The same commands appended by another store: other event IDs at every sequence.
    const replaced = new MemoryDurableEventStore();
    await appendCycles(replaced, sessionId, 0, 6);
    await copyCheckpoint(source, replaced);
    const other = await loadInspection(replaced, sessionId);
    expect(other.checkpoint).toMatchObject({ sequence: 21, behind: 10, status: 'discarded' });
    expect(other.checkpoint?.notes[0]).toMatch(/another event at sequence 21/);
  });

  it('leaves it unchecked when the log breaks the projector before its sequence', async () => {
    const source = await checkpointed();
    const broken = new MemoryDurableEventStore();
    await broken.append(sessionId, [{ type: 'session_created', data: { source: 'create' } }], { expectedLastSequence: null });
    // A turn of a request that was never accepted: a valid envelope, an invalid lifecycle.
    await broken.append(sessionId, [{ type: 'turn_started', requestId: RequestId('ghost'), turnId: TurnId('ghost-turn'), data: { turn: 1 } }]);
    await appendCycles(broken, sessionId, 0, 6);
    await copyCheckpoint(source, broken);
    const inspection = await loadInspection(broken, sessionId);
    expect(inspection.projectionFailure?.sequence).toBe(2);
    expect(inspection.checkpoint).toMatchObject({ sequence: 21, behind: 11, status: 'unchecked', defects: [] });
    expect(inspection.checkpoint?.notes[0]).toMatch(/breaks the projector before sequence 21/);
    expect(describeCheckpoint(inspection)).toMatch(/not checked/);
  });

  it('shows a checkpoint the store fails to read as unreadable, and still renders', async () => {
    const store = await checkpointed();
    // Fault injection: the store's checkpoint read fails (as an RPC over its size cap would).
    const failing = new Proxy(store, {
      get(target, property) {
        if (property === 'readCheckpoint') return () => Promise.reject(new Error('injected read failure'));
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const inspection = await loadInspection(failing, sessionId);
    expect(inspection.headSequence).toBe(31);
    expect(inspection.projectionFailure).toBeNull();
    expect(inspection.checkpoint).toMatchObject({ sequence: 0, status: 'discarded' });
    expect(describeCheckpoint(inspection)).toMatch(/^unreadable: reading it failed \(injected read failure\); an open folds the whole log$/);
    expect(await render(inspection)).toContain('data-status="discarded">unreadable: ');
  });
});
