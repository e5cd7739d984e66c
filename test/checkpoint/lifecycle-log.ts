/**
 * Realistic lifecycle logs, fast: cycles of `request_accepted -> request_started -> turn_started
 * -> turn_completed -> request_completed` (one command each), about 0.5 KB per event on average,
 * appended in large raw batches (one store call per `cyclesPerBatch` cycles). Used by the kill -9
 * tests and the checkpoint benchmark.
 */
import type { DurableEventStore } from '../../src/core/store.js';
import type { DurableEventDraft } from '../../src/protocol/events.js';
import { CommandId, InputId, RequestId, TurnId, type SessionId } from '../../src/protocol/ids.js';

const INPUT = 'Run the deployment checks for the staging cluster, compare the results with the last green build, and summarise any regressions for the on-call engineer. '.repeat(
  4,
);
const OUTPUT = 'All deployment checks passed on staging: lint, unit, integration and end-to-end suites are green; latency and error budgets match the last green build within noise. '.repeat(
  5,
);

/** The five drafts of lifecycle cycle `index` (command `cycle-<index>`). */
export function cycleDrafts(index: number, prefix = 'cycle'): DurableEventDraft[] {
  const commandId = CommandId(`${prefix}-${index}`);
  const requestId = RequestId(`${prefix}-request-${index}`);
  const turnId = TurnId(`${prefix}-turn-${index}`);
  return [
    {
      type: 'request_accepted',
      requestId,
      commandId,
      data: { inputId: InputId(`${prefix}-input-${index}`), input: `${INPUT}#${index}`, priority: 'next' },
    },
    { type: 'request_started', requestId, commandId, data: {} },
    { type: 'turn_started', requestId, turnId, commandId, data: { turn: 1 } },
    { type: 'turn_completed', requestId, turnId, commandId, data: { turn: 1, hasToolCalls: false } },
    { type: 'request_completed', requestId, commandId, data: { output: `${OUTPUT}#${index}` } },
  ];
}

/**
 * Appends `session_created` (when the session is empty) and then `cycles` cycles starting at
 * `firstCycle`, `cyclesPerBatch` per append. Returns the new head.
 */
export async function appendCycles(
  store: DurableEventStore,
  sessionId: SessionId,
  firstCycle: number,
  cycles: number,
  cyclesPerBatch = 200,
): Promise<number> {
  let head = (await store.getHeadSequence(sessionId)) ?? 0;
  if (head === 0) {
    head = (await store.append(sessionId, [{ type: 'session_created', data: { source: 'create' } }], { expectedLastSequence: null })).lastSequence;
  }
  for (let start = firstCycle; start < firstCycle + cycles; start += cyclesPerBatch) {
    const drafts: DurableEventDraft[] = [];
    for (let index = start; index < Math.min(start + cyclesPerBatch, firstCycle + cycles); index++) drafts.push(...cycleDrafts(index));
    head = (await store.append(sessionId, drafts)).lastSequence;
  }
  return head;
}
