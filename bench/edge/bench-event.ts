/**
 * The event the edge benchmark appends, shared by the Node driver (`bench/edge.bench.ts`) and the
 * bench Worker (`bench-routes.ts`): a `request_completed` draft with ~100 bytes of data, the same
 * shape the JSONL benchmark uses. Runtime-neutral (protocol imports only).
 */
import type { DurableEventDraft } from '../../src/protocol/events.js';
import { RequestId } from '../../src/protocol/ids.js';

/** Draft number `i` (the index makes each request id distinct). */
export function benchDraft(i: number): DurableEventDraft {
  return {
    type: 'request_completed',
    requestId: RequestId(`request-${i}`),
    data: { output: { summary: 'deployment checks passed', checks: ['lint', 'unit', 'e2e'], index: i } },
  };
}
