/** The rows of the session operation table for the commit and projection (host `journal`). */
import type { OperationSpec } from './spec.js';

/** The journal rows. */
export const JOURNAL_ROWS = {} as const satisfies Record<string, OperationSpec>;
