/** The rows of the session operation table for the agent Session running in the object (host `agent`). */
import type { OperationSpec } from './spec.js';

/** The agent rows. */
export const AGENT_ROWS = {} as const satisfies Record<string, OperationSpec>;
