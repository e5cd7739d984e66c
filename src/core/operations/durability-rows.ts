/** The rows of the session operation table for the durability records and durable tool calls (host `durability`). */
import type { OperationSpec } from './spec.js';

/** The durability rows. */
export const DURABILITY_ROWS = {} as const satisfies Record<string, OperationSpec>;
