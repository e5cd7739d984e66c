/**
 * Helpers of the Session tests: read a whole log, a store view that "crashes" after a given head
 * (every later append fails with an unknown outcome, so nothing more is written), and a collector
 * of stream frames.
 */
import {
  DurableEventStoreError,
  MemoryDurableEventStore,
  SessionId,
  type DurableEventEnvelope,
  type DurableEventStore,
  type EventSequence,
} from '../../src/index.js';
import type { Session, SessionStreamFrame } from '../../src/session.js';

export async function readAll(store: DurableEventStore, sessionId: string): Promise<DurableEventEnvelope[]> {
  const events: DurableEventEnvelope[] = [];
  let after: EventSequence | undefined;
  for (;;) {
    const page = await store.read(SessionId(sessionId), { ...(after === undefined ? {} : { after }), limit: 1000 });
    events.push(...page.events);
    if (!page.hasMore || page.nextCursor === null) return events;
    after = page.nextCursor;
  }
}

export function types(events: readonly DurableEventEnvelope[]): string[] {
  return events.map((event) => event.type);
}

/** A view of `store` whose appends fail (outcome unknown, nothing written) once the head reached `k`. */
export function crashAfter<S extends DurableEventStore>(store: S, k: number): S {
  let head = 0;
  return new Proxy(store, {
    get(target, property) {
      if (property === 'append') {
        return async (...args: Parameters<DurableEventStore['append']>) => {
          if (head >= k) throw new DurableEventStoreError('DURABLE_EVENT_UNAVAILABLE', 'simulated crash');
          const result = await target.append(...args);
          head = result.lastSequence;
          return result;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Collects every frame of `session.stream()` until it ends. */
export function collect(session: Session): { frames: SessionStreamFrame[]; done: Promise<void> } {
  const frames: SessionStreamFrame[] = [];
  const iterator = session.stream();
  const done = (async () => {
    for await (const frame of iterator) frames.push(frame);
  })();
  return { frames, done };
}

/** A deferred promise. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export function memoryStore(clock?: () => number): MemoryDurableEventStore {
  return new MemoryDurableEventStore(clock === undefined ? {} : { clock });
}
