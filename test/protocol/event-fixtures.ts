/**
 * One valid draft per event type (with every optional payload field where it adds coverage),
 * plus type-specific invalid payload mutations. Shared by the protocol tests.
 */
import {
  CommandId,
  EventId,
  EventSequence,
  InputId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  SessionId,
  ToolAttemptId,
  TurnId,
  type DurableEventDraft,
  type DurableEventEnvelope,
  type DurableEventType,
} from '../../src/protocol/index.js';

export const ids = {
  sessionId: SessionId('session-1'),
  requestId: RequestId('request-1'),
  turnId: TurnId('turn-1'),
  commandId: CommandId('command-1'),
  inputId: InputId('input-1'),
  modelAttemptId: ModelAttemptId('model-attempt-1'),
  toolAttemptId: ToolAttemptId('tool-attempt-1'),
  permissionRequestId: PermissionRequestId('permission-1'),
  eventId: EventId('event-1'),
};

const { requestId, turnId, commandId, inputId, modelAttemptId, toolAttemptId, permissionRequestId } = ids;
const tool = { toolCallId: 'call-1', toolName: 'shell' };

export const validDrafts: { [T in DurableEventType]: DurableEventDraft<T> } = {
  session_created: { type: 'session_created', data: { source: 'fork', parentSessionId: SessionId('parent-1') } },
  session_closed: { type: 'session_closed', data: { reason: 'completed' } },
  request_accepted: {
    type: 'request_accepted',
    requestId,
    commandId,
    data: {
      inputId,
      input: [
        { type: 'text', text: 'look at this' },
        { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
        { type: 'file', mediaType: 'text/plain; charset=utf-8', name: 'notes.txt', url: 'https://example.com/n.txt' },
      ],
      priority: 'next',
      maxTurns: 10,
      model: { provider: 'anthropic', model: 'claude', api: 'messages' },
      context: { cwd: '/tmp', flags: [1, 2.5, null, true] },
      recovery: { requestId: RequestId('request-0'), turnId: TurnId('turn-0'), turn: 3 },
    },
  },
  request_started: { type: 'request_started', requestId, data: {} },
  request_completed: {
    type: 'request_completed',
    requestId,
    data: { output: { text: 'done' }, usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3, cacheReadTokens: 0 } },
  },
  request_failed: {
    type: 'request_failed',
    requestId,
    data: { error: { code: 'E_MODEL', message: 'boom', retryable: false, details: { status: 500 } } },
  },
  request_interrupted: { type: 'request_interrupted', requestId, data: { reason: 'superseded', byInputId: InputId('input-2') } },
  turn_started: { type: 'turn_started', requestId, turnId, data: { turn: 1, model: { provider: 'openai', model: 'gpt' } } },
  turn_completed: { type: 'turn_completed', requestId, turnId, data: { turn: 1, hasToolCalls: true } },
  turn_aborted: { type: 'turn_aborted', requestId, turnId, data: { turn: 2, reason: 'user_abort' } },
  model_request_started: {
    type: 'model_request_started',
    requestId,
    turnId,
    modelAttemptId,
    data: { model: 'claude', modelIdentity: { provider: 'anthropic', api: 'messages' }, streaming: true },
  },
  model_request_completed: {
    type: 'model_request_completed',
    requestId,
    turnId,
    modelAttemptId,
    data: {
      response: {
        content: 'calling a tool',
        toolCalls: [{ id: 'call-1', name: 'shell', arguments: { cmd: 'ls' } }],
        stopReason: 'tool_use',
        usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 },
      },
    },
  },
  model_request_failed: {
    type: 'model_request_failed',
    requestId,
    turnId,
    modelAttemptId,
    data: { error: { code: 'rate_limited', message: 'slow down', retryable: true } },
  },
  model_request_aborted: { type: 'model_request_aborted', requestId, turnId, modelAttemptId, data: { reason: 'timeout' } },
  tool_scheduled: {
    type: 'tool_scheduled',
    requestId,
    turnId,
    modelAttemptId,
    toolAttemptId,
    data: { ...tool, modelInput: { cmd: 'ls' }, input: { cmd: 'ls -la' }, sideEffect: 'idempotent', interruptBehavior: 'cancel' },
  },
  tool_started: { type: 'tool_started', requestId, turnId, toolAttemptId, data: { ...tool, input: { cmd: 'ls -la' }, sideEffect: 'pure' } },
  tool_completed: { type: 'tool_completed', requestId, turnId, toolAttemptId, data: { ...tool, result: ['a.txt', 'b.txt'] } },
  tool_failed: { type: 'tool_failed', requestId, turnId, toolAttemptId, data: { ...tool, error: { code: 'ENOENT', message: 'no file' } } },
  tool_cancelled: { type: 'tool_cancelled', requestId, turnId, toolAttemptId, data: { ...tool, reason: 'user_abort' } },
  tool_outcome_unknown: { type: 'tool_outcome_unknown', requestId, turnId, toolAttemptId, data: { ...tool, reason: 'process_restart' } },
  permission_requested: {
    type: 'permission_requested',
    requestId,
    turnId,
    toolAttemptId,
    data: { permissionRequestId, ...tool, input: { cmd: 'rm -rf x' }, message: 'allow?' },
  },
  permission_resolved: {
    type: 'permission_resolved',
    requestId,
    turnId,
    toolAttemptId,
    data: { permissionRequestId, decision: 'deny', message: 'no' },
  },
  input_applied: { type: 'input_applied', requestId, turnId, data: { inputId, priority: 'now' } },
};

/** A label and a function producing an invalid `data` from a deep copy of the valid one. */
export type DataMutation = [label: string, mutate: (data: Record<string, unknown>) => void];

/** Type-specific invalid payloads: bad enums, non-finite numbers, bad ids, bad shapes. */
export const invalidDataMutations: { [T in DurableEventType]: DataMutation[] } = {
  session_created: [
    ['bad enum source', (d) => (d['source'] = 'clone')],
    ['bad id parentSessionId', (d) => (d['parentSessionId'] = '')],
    ['undefined optional', (d) => (d['source'] = undefined)],
  ],
  session_closed: [
    ['bad enum reason', (d) => (d['reason'] = 'bored')],
    ['missing reason', (d) => delete d['reason']],
  ],
  request_accepted: [
    ['bad enum priority', (d) => (d['priority'] = 'urgent')],
    ['bad id inputId', (d) => (d['inputId'] = 'a\u0000b')],
    ['non-finite maxTurns', (d) => (d['maxTurns'] = Infinity)],
    ['maxTurns too large', (d) => (d['maxTurns'] = 10_001)],
    ['maxTurns zero', (d) => (d['maxTurns'] = 0)],
    ['non-finite in context', (d) => (d['context'] = { x: NaN })],
    ['context not an object', (d) => (d['context'] = [1])],
    ['empty content parts', (d) => (d['input'] = [])],
    ['too many content parts', (d) => (d['input'] = Array.from({ length: 257 }, () => ({ type: 'text', text: 'x' })))],
    ['image with data and url', (d) => (d['input'] = [{ type: 'image', mediaType: 'image/png', data: 'AA==', url: 'https://x.y/z' }])],
    ['image without source', (d) => (d['input'] = [{ type: 'image', mediaType: 'image/png' }])],
    ['image bad base64', (d) => (d['input'] = [{ type: 'image', mediaType: 'image/png', data: '!!!' }])],
    ['bad media type', (d) => (d['input'] = [{ type: 'file', mediaType: 'png', url: 'https://x.y/z' }])],
    ['unknown part type', (d) => (d['input'] = [{ type: 'audio', text: 'x' }])],
    ['unknown part field', (d) => (d['input'] = [{ type: 'text', text: 'x', lang: 'en' }])],
    ['bad recovery turn', (d) => (d['recovery'] = { requestId: 'r', turnId: 't', turn: 0 })],
    ['recovery extra key', (d) => (d['recovery'] = { requestId: 'r', turnId: 't', turn: 1, kind: 'x' })],
    ['model missing provider', (d) => (d['model'] = { model: 'm' })],
  ],
  request_started: [['any data field', (d) => (d['note'] = 'x')]],
  request_completed: [
    ['non-finite usage', (d) => (d['usage'] = { inputTokens: 1, outputTokens: NaN, totalTokens: 1 })],
    ['negative usage', (d) => (d['usage'] = { inputTokens: -1, outputTokens: 1, totalTokens: 1 })],
    ['negative zero usage', (d) => (d['usage'] = { inputTokens: -0, outputTokens: 1, totalTokens: 1 })],
    ['fractional usage', (d) => (d['usage'] = { inputTokens: 1.5, outputTokens: 1, totalTokens: 1 })],
    ['output with undefined', (d) => (d['output'] = { a: undefined })],
    ['output with Date', (d) => (d['output'] = new Date(0))],
  ],
  request_failed: [
    ['non-finite details', (d) => (d['error'] = { code: 'x', message: 'y', details: [Infinity] })],
    ['error missing message', (d) => (d['error'] = { code: 'x' })],
    ['error empty code', (d) => (d['error'] = { code: '', message: 'y' })],
    ['error extra key', (d) => (d['error'] = { code: 'x', message: 'y', stack: 'z' })],
  ],
  request_interrupted: [
    ['bad enum reason', (d) => (d['reason'] = 'nope')],
    ['bad id byInputId', (d) => (d['byInputId'] = 'x'.repeat(257))],
  ],
  turn_started: [
    ['non-finite turn', (d) => (d['turn'] = NaN)],
    ['turn zero', (d) => (d['turn'] = 0)],
    ['turn as string', (d) => (d['turn'] = '1')],
  ],
  turn_completed: [
    ['non-finite turn', (d) => (d['turn'] = -Infinity)],
    ['hasToolCalls not boolean', (d) => (d['hasToolCalls'] = 'yes')],
  ],
  turn_aborted: [
    ['bad enum reason', (d) => (d['reason'] = 'oops')],
    ['fractional turn', (d) => (d['turn'] = 1.5)],
  ],
  model_request_started: [
    ['streaming missing', (d) => delete d['streaming']],
    ['modelIdentity missing api', (d) => (d['modelIdentity'] = { provider: 'p' })],
    ['empty model', (d) => (d['model'] = '')],
  ],
  model_request_completed: [
    ['bad enum stopReason', (d) => (d['response'] = { content: 'x', stopReason: 'bored' })],
    ['non-finite in tool arguments', (d) => (d['response'] = { content: 'x', toolCalls: [{ id: 'c', name: 'n', arguments: { n: NaN } }] })],
    ['non-finite usage', (d) => (d['response'] = { content: 'x', usage: { promptTokens: Infinity, completionTokens: 1, totalTokens: 1 } })],
    ['response extra key', (d) => (d['response'] = { content: 'x', raw: {} })],
  ],
  model_request_failed: [['error not an object', (d) => (d['error'] = 'boom')]],
  model_request_aborted: [['bad enum reason', (d) => (d['reason'] = 'later')]],
  tool_scheduled: [
    ['bad enum sideEffect', (d) => (d['sideEffect'] = 'dangerous')],
    ['bad enum interruptBehavior', (d) => (d['interruptBehavior'] = 'ignore')],
    ['non-finite modelInput', (d) => (d['modelInput'] = { n: Infinity })],
    ['missing input', (d) => delete d['input']],
    ['empty toolName', (d) => (d['toolName'] = '')],
  ],
  tool_started: [
    ['bad enum sideEffect', (d) => (d['sideEffect'] = 'maybe')],
    ['sparse input', (d) => (d['input'] = sparse([1, 2, 3], 1))],
  ],
  tool_completed: [
    ['non-finite result', (d) => (d['result'] = NaN)],
    ['bigint result', (d) => (d['result'] = 1n)],
    ['missing toolCallId', (d) => delete d['toolCallId']],
  ],
  tool_failed: [['error extra key', (d) => (d['error'] = { code: 'x', message: 'y', extra: 1 })]],
  tool_cancelled: [['bad enum reason', (d) => (d['reason'] = 'whatever')]],
  tool_outcome_unknown: [['bad enum reason', (d) => (d['reason'] = 'unknown')]],
  permission_requested: [
    ['bad id permissionRequestId', (d) => (d['permissionRequestId'] = '')],
    ['non-finite input', (d) => (d['input'] = [-Infinity])],
    ['message not string', (d) => (d['message'] = 42)],
  ],
  permission_resolved: [
    ['bad enum decision', (d) => (d['decision'] = 'maybe')],
    ['bad id permissionRequestId', (d) => (d['permissionRequestId'] = 7)],
  ],
  input_applied: [
    ['bad enum priority', (d) => (d['priority'] = 'soon')],
    ['bad id inputId', (d) => (d['inputId'] = '\n')],
  ],
};

export const RECORDED_AT = '2025-01-31T12:00:00.000Z';

/** The envelope a store would produce for `draft` at `sequence`. */
export function envelopeOf(draft: DurableEventDraft, sequence = 1): DurableEventEnvelope {
  // SAFETY: the store adds exactly these fields to a valid draft.
  return {
    schemaVersion: 4,
    eventId: EventId(`event-${sequence}`),
    sequence: EventSequence(sequence),
    sessionId: ids.sessionId,
    recordedAt: RECORDED_AT,
    occurredAt: RECORDED_AT,
    ...draft,
  } as DurableEventEnvelope;
}

/** `items` with a hole punched at `index`. */
export function sparse(items: unknown[], index: number): unknown[] {
  const out = [...items];
  delete out[index];
  return out;
}

/** Deep copy through JSON (fixtures are lossless JSON). */
export function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
