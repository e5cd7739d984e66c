/**
 * The journal lends one AbortSignal to its store calls one after another instead of building one
 * per call. What must hold: a call never receives a signal that is aborted or that another
 * in-flight call holds, a signal that was aborted is never lent again, and the loans of one
 * controller are bounded.
 */
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { lifecycleDrafts as d } from '../../src/conformance/checks-journal.js';
import { AbortControllerLender, MAX_SIGNAL_LOANS, withDeadline } from '../../src/core/abort.js';
import { ManualTimeSource } from '../../src/core/time.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { CommandId, SessionId } from '../../src/protocol/ids.js';
import { wrapStore } from './store-wrappers.js';

const sessionId = SessionId('lent-signals');

describe('AbortControllerLender', () => {
  it('lends one controller to calls one after another, and a fresh one to an overlapping call', () => {
    const lender = new AbortControllerLender();
    const first = lender.borrow();
    const overlapping = lender.borrow();
    expect(overlapping).not.toBe(first);
    lender.giveBack(first);
    lender.giveBack(overlapping); // the lender keeps one idle controller; this one is dropped
    expect(lender.borrow()).toBe(first);
  });

  it('never lends an aborted controller again', () => {
    const lender = new AbortControllerLender();
    const first = lender.borrow();
    first.abort(new Error('deadline'));
    lender.giveBack(first);
    const next = lender.borrow();
    expect(next).not.toBe(first);
    expect(next.signal.aborted).toBe(false);
  });

  it(`replaces a controller after ${MAX_SIGNAL_LOANS} loans`, () => {
    const lender = new AbortControllerLender();
    const first = lender.borrow();
    let current = first;
    const seen: AbortController[] = [];
    for (let loan = 0; loan < MAX_SIGNAL_LOANS * 2; loan++) {
      lender.giveBack(current);
      current = lender.borrow();
      seen.push(current);
    }
    expect(seen.slice(0, MAX_SIGNAL_LOANS - 1).every((c) => c === first)).toBe(true);
    expect(seen[MAX_SIGNAL_LOANS - 1]).not.toBe(first);
  });

  it('withDeadline gives the controller back only after the call settled, and not after a deadline', async () => {
    const lender = new AbortControllerLender();
    let lent: AbortSignal | undefined;
    let finish!: () => void;
    const running = withDeadline(
      60_000,
      undefined,
      (signal) => {
        lent = signal;
        return new Promise<void>((resolve) => (finish = resolve));
      },
      () => new Error('timeout'),
      undefined,
      lender,
    );
    // While the call runs, its controller is out: a second call gets another one.
    const other = lender.borrow();
    expect(other.signal).not.toBe(lent);
    finish();
    await running;
    expect(lender.borrow().signal).toBe(lent);

    const timedOut = new AbortControllerLender();
    const time = new ManualTimeSource();
    let abortedSignal: AbortSignal | undefined;
    const hanging = withDeadline(
      50,
      undefined,
      (signal) => {
        abortedSignal = signal;
        return new Promise<void>(() => undefined);
      },
      () => new Error('timeout'),
      time,
      timedOut,
    );
    const settled = expect(hanging).rejects.toThrow('timeout');
    await time.advance(50);
    await settled;
    expect(abortedSignal?.aborted).toBe(true);
    const next = timedOut.borrow();
    expect(next.signal).not.toBe(abortedSignal);
    expect(next.signal.aborted).toBe(false);
  });
});

describe('the journal lends signals to its store calls', () => {
  it('reuses one signal across sequential commits; no call ever gets an aborted or shared signal', async () => {
    const inner = new MemoryDurableEventStore();
    const inFlight = new Set<AbortSignal>();
    const signals: AbortSignal[] = [];
    let violations = 0;
    let hangNext = false;
    const track = async <T>(signal: AbortSignal | undefined, run: () => Promise<T>): Promise<T> => {
      if (signal === undefined) throw new Error('the journal always passes a signal');
      if (signal.aborted || inFlight.has(signal)) violations++;
      signals.push(signal);
      inFlight.add(signal);
      try {
        if (hangNext) {
          hangNext = false;
          // A store that waits until the deadline aborts its call.
          await new Promise<void>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }));
        }
        return await run();
      } finally {
        inFlight.delete(signal);
      }
    };
    const store = wrapStore(inner, {
      append: (append, id, drafts, options) => track(options?.signal, () => append(id, drafts, options)),
      read: (read, id, options) => track(options?.signal, () => read(id, options)),
    });
    const journal = await DurableSessionJournal.open(store, sessionId);
    await journal.commit({ commandId: CommandId('begin'), events: [d.sessionCreated(), d.requestAccepted('r1'), d.requestStarted('r1')] });
    for (let index = 0; index < 4; index++) {
      await journal.commit({ commandId: CommandId(`input-${index}`), events: [d.inputApplied('r1', `input-${index}`)] });
    }
    // Commits and refreshes racing each other: the journal queues them, but they must never share a signal.
    await Promise.all([
      journal.commit({ commandId: CommandId('input-a'), events: [d.inputApplied('r1', 'input-a')] }),
      journal.refresh(),
      journal.commit({ commandId: CommandId('input-b'), events: [d.inputApplied('r1', 'input-b')] }),
    ]);
    expect(violations).toBe(0);
    const distinct = new Set(signals).size;
    expect(distinct).toBeLessThan(signals.length); // reused
    expect(distinct).toBeGreaterThanOrEqual(Math.ceil(signals.length / MAX_SIGNAL_LOANS)); // but bounded

    // An append stopped while in flight (here by the caller's signal; a deadline aborts the same
    // controller) aborts its signal; the next call gets a live one.
    hangNext = true;
    const before = signals.length;
    const caller = new AbortController();
    const late = journal.commit({ commandId: CommandId('input-late'), events: [d.inputApplied('r1', 'input-late')] }, { signal: caller.signal });
    const stopped = expect(late).rejects.toThrow();
    while (signals.length === before) await new Promise((resolve) => setImmediate(resolve));
    caller.abort(new Error('stop'));
    await stopped;
    const aborted = signals[before];
    expect(aborted?.aborted).toBe(true);
    await journal.refresh();
    expect(signals.slice(before + 1).every((signal) => signal !== aborted && !signal.aborted)).toBe(true);
    expect(violations).toBe(0);
  });
});
