/**
 * Durable scopes: the namespace a port's `step`, `sleep` and `waitFor` keys live in.
 *
 * A standalone port uses its `runId`. A tool mounted on the agent runtime uses the tuple
 * `(runId, toolName, toolCallId)`, encoded as a JSON array so that no choice of IDs can make two
 * different tuples collide (`["a","b-c","d"]` is not `["a-b","c","d"]`).
 */
import { checkDurabilityKey } from './record-engine.js';

/**
 * The scope of one mounted tool call. A replay must present the same three values to find the
 * records of the first execution, which is why tool call IDs must be stable.
 *
 * @example
 * toolCallScope('run-1', 'charge_card', 'call-7'); // '["run-1","charge_card","call-7"]'
 */
export function toolCallScope(runId: string, toolName: string, toolCallId: string): string {
  return JSON.stringify([
    checkDurabilityKey(runId, 'runId'),
    checkDurabilityKey(toolName, 'toolName'),
    checkDurabilityKey(toolCallId, 'toolCallId'),
  ]);
}
