/**
 * The run table of a SessionObject: the tool calls it executes for its mounted agents.
 *
 * The durability records hold what a tool call DID (steps, sleeps, waits, run progress), but not
 * how to call it again. A replay after eviction needs the call itself, so each call the object
 * starts gets one `tool_runs` row: scope, run, stable tool call id, agent, tool, input (JSON in
 * its own key order), status and failed attempts. The status mirrors the call's final `run_event`
 * record and is written in the same transaction as it; `running` rows are what alarms, deliveries
 * and wake-ups resume. All methods are synchronous, so they can run inside a log transaction.
 */
import type { SqlDriver } from '../adapters/sql/driver.js';
import type { ToolRunStatus } from '../core/operations/durability-rows.js';
import { DurabilityError } from '../protocol/errors.js';
import type { SessionId } from '../protocol/ids.js';
import type { JsonValue } from '../protocol/json.js';

/** One tool call the object runs. */
export interface ToolRunRow {
  sessionId: SessionId;
  scope: string;
  runId: string;
  toolCallId: string;
  agent: string;
  toolName: string;
  /** The input, as stored (JSON text). */
  inputJson: string;
  status: ToolRunStatus;
  attempts: number;
  startedMs: number;
}

interface Row {
  session_id: string;
  scope: string;
  run_id: string;
  tool_call_id: string;
  agent: string;
  tool_name: string;
  input: string;
  status: string;
  attempts: number;
  started_ms: number;
}

const COLUMNS = 'session_id, scope, run_id, tool_call_id, agent, tool_name, input, status, attempts, started_ms';

function toRun(row: Row): ToolRunRow {
  if (row.status !== 'running' && row.status !== 'completed' && row.status !== 'failed') {
    throw new DurabilityError('DURABILITY_CORRUPT_RECORD', `tool run ${row.scope} has status ${row.status}`);
  }
  return {
    // SAFETY: rows are only inserted by `insert`, with a validated session ID.
    sessionId: row.session_id as SessionId,
    scope: row.scope,
    runId: row.run_id,
    toolCallId: row.tool_call_id,
    agent: row.agent,
    toolName: row.tool_name,
    inputJson: row.input,
    status: row.status,
    attempts: row.attempts,
    startedMs: row.started_ms,
  };
}

/** Parses a stored input back into JSON. */
export function runInput(run: ToolRunRow): JsonValue {
  return JSON.parse(run.inputJson) as JsonValue;
}

/** The `tool_runs` table (see the module header). */
export class ToolRunTable {
  readonly #driver: SqlDriver;

  constructor(driver: SqlDriver) {
    this.#driver = driver;
  }

  get(sessionId: SessionId, scope: string): ToolRunRow | undefined {
    const row = this.#driver.query<Row>(`SELECT ${COLUMNS} FROM tool_runs WHERE session_id = ? AND scope = ?`, sessionId, scope)[0];
    return row === undefined ? undefined : toRun(row);
  }

  /** Inserts a new `running` call with no failed attempts. */
  insert(run: Omit<ToolRunRow, 'status' | 'attempts'>): ToolRunRow {
    this.#driver.exec(
      `INSERT INTO tool_runs (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', 0, ?)`,
      run.sessionId,
      run.scope,
      run.runId,
      run.toolCallId,
      run.agent,
      run.toolName,
      run.inputJson,
      run.startedMs,
    );
    return { ...run, status: 'running', attempts: 0 };
  }

  /** Sets the status and the failed-attempt count of a call. */
  update(sessionId: SessionId, scope: string, status: ToolRunStatus, attempts: number): void {
    this.#driver.exec(
      'UPDATE tool_runs SET status = ?, attempts = ? WHERE session_id = ? AND scope = ?',
      status,
      attempts,
      sessionId,
      scope,
    );
  }

  /** The calls of one run, in start order. */
  ofRun(sessionId: SessionId, runId: string): ToolRunRow[] {
    return this.#driver
      .query<Row>(`SELECT ${COLUMNS} FROM tool_runs WHERE session_id = ? AND run_id = ? ORDER BY started_ms, scope`, sessionId, runId)
      .map(toRun);
  }

  /** Every call still `running`, in start order. */
  running(): ToolRunRow[] {
    return this.#driver
      .query<Row>(`SELECT ${COLUMNS} FROM tool_runs WHERE status = 'running' ORDER BY started_ms, scope`)
      .map(toRun);
  }

  /** True when `scope` is a call of this object that is still running. */
  isRunning(sessionId: SessionId, scope: string): boolean {
    return this.get(sessionId, scope)?.status === 'running';
  }
}
