/**
 * What the inspector needs from where it runs: a store per session, who the viewer is, and the
 * actions. Runtime-neutral: the CLI's `serve` and the Worker's inspect route build one each.
 *
 * Actions run through the recovery coordinator and `deliverDurably` on the same store the page
 * reads (at the edge that store is the session object's RPC client, so the object stays the one
 * writer and every command is pinned to the head the coordinator observed).
 */
import { deliverDurably } from '../core/durability/deliver.js';
import { isDurabilityRecordStore, type DurabilityRecordStore } from '../core/durability/record-contract.js';
import { DurableSessionRecoveryCoordinator } from '../core/recovery/coordinator.js';
import type { DurableModelOutcome, DurableToolOutcome } from '../core/recovery/coordinator-types.js';
import type { DurableEventStore, DurableExecutionLeaseStore } from '../core/store.js';
import { DurableEventStoreError } from '../protocol/errors.js';
import type { PermissionDecision } from '../protocol/event-payloads.js';
import {
  CommandId,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  SessionId,
  ToolAttemptId,
  TurnId,
} from '../protocol/ids.js';
import type { JsonValue } from '../protocol/json.js';
import { forkSession, type ForkSessionResult } from './model/fork.js';

/** What a viewer may do on the page. `fork` creates another session, so it is an admin's power. */
export type InspectorScope = 'read' | 'subscribe' | 'recover' | 'deliver' | 'fork';

/** Every scope (a local `serve` viewer without `--read-only`, or an admin at the edge). */
export const ALL_INSPECTOR_SCOPES: ReadonlySet<InspectorScope> = new Set(['read', 'subscribe', 'recover', 'deliver', 'fork']);

/** The store shape the inspector reads and acts through. */
type InspectorStore = DurableEventStore & Partial<DurableExecutionLeaseStore> & Partial<DurabilityRecordStore>;

/** Where the inspector runs. `E` is the host's environment (Worker bindings; nothing on Node). */
export interface InspectorHost<E> {
  /** The store holding `sessionId`. */
  store(env: E, sessionId: SessionId): InspectorStore;
  /**
   * The viewer's scopes on `sessionId` for `token`, or `null` when the token is not valid for it.
   * Never log or echo the token.
   */
  authorize(env: E, token: string, sessionId: SessionId): Promise<ReadonlySet<InspectorScope> | null>;
  /** Set `Secure` on the cookie (default: when the request came over https). */
  secureCookie?: boolean;
  /** Longest life of one live-tail response before the browser reconnects (default 5 min). */
  tailLifetimeMs?: number;
  /**
   * A session longer than this many events opens from its projection checkpoint, not by folding
   * the whole log (default `DEFAULT_PAGE_FULL_FOLD_LIMIT`, 50,000; `Infinity`: always fold). The
   * page's `?full=1` folds the whole log anyway (and audits the checkpoint).
   */
  fullFoldLimit?: number;
  /**
   * Answers a permission through the agent that runs the session, when one does (at the edge:
   * the session object's agent, the same path as `POST .../permissions/:id`); `null` when no
   * agent runs it, and the action goes through the recovery coordinator. An agent session holds
   * an execution lease the page has not got, so the coordinator would refuse it.
   */
  answerPermission?(env: E, sessionId: SessionId, action: InspectorPermissionAction): Promise<InspectorActionResult | null>;
}

/** The page's permission answer. */
export type InspectorPermissionAction = Extract<InspectorAction, { action: 'resolve-permission' }>;

/** An action request, as the page's script posts it. */
type InspectorAction =
  | { action: 'resolve-permission'; commandId: string; permissionRequestId: string; decision: PermissionDecision; message?: string }
  | { action: 'reconcile-tool-outcome'; commandId: string; toolAttemptId: string; outcome: DurableToolOutcome }
  | { action: 'reconcile-model-outcome'; commandId: string; requestId: string; turnId: string; modelAttemptId: string; outcome: DurableModelOutcome }
  | { action: 'deliver'; runId: string; key: string; deliveryId: string; payload: JsonValue }
  | { action: 'fork'; at: number; newSessionId: string };

/** The scope each action needs. */
export const ACTION_SCOPES: Record<InspectorAction['action'], InspectorScope> = {
  'resolve-permission': 'recover',
  'reconcile-tool-outcome': 'recover',
  'reconcile-model-outcome': 'recover',
  deliver: 'deliver',
  fork: 'fork',
};

/** What an action answers the page. */
export interface InspectorActionResult {
  ok: true;
  message: string;
  headSequence?: number | null;
  fork?: ForkSessionResult;
}

function invalid(message: string): DurableEventStoreError {
  return new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', message);
}

function text(value: unknown, label: string): string {
  if (typeof value !== 'string' || value === '') throw invalid(`${label} must be a non-empty string`);
  return value;
}

/** Checks a posted action body (the IDs with their constructors, the rest by shape). */
export function parseInspectorAction(body: unknown): InspectorAction {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('the action must be a JSON object');
  const value = body as Record<string, unknown>;
  switch (value['action']) {
    case 'resolve-permission': {
      const decision = value['decision'];
      if (decision !== 'allow' && decision !== 'deny' && decision !== 'cancel') throw invalid('decision must be allow, deny or cancel');
      return {
        action: 'resolve-permission',
        commandId: text(value['commandId'], 'commandId'),
        permissionRequestId: text(value['permissionRequestId'], 'permissionRequestId'),
        decision,
        ...(typeof value['message'] === 'string' && value['message'] !== '' ? { message: value['message'] } : {}),
      };
    }
    case 'reconcile-tool-outcome':
      // SAFETY: the coordinator validates the outcome strictly and refuses anything else.
      return { action: 'reconcile-tool-outcome', commandId: text(value['commandId'], 'commandId'), toolAttemptId: text(value['toolAttemptId'], 'toolAttemptId'), outcome: value['outcome'] as DurableToolOutcome };
    case 'reconcile-model-outcome':
      return {
        action: 'reconcile-model-outcome',
        commandId: text(value['commandId'], 'commandId'),
        requestId: text(value['requestId'], 'requestId'),
        turnId: text(value['turnId'], 'turnId'),
        modelAttemptId: text(value['modelAttemptId'], 'modelAttemptId'),
        // SAFETY: as above, checked by the coordinator.
        outcome: value['outcome'] as DurableModelOutcome,
      };
    case 'deliver':
      return {
        action: 'deliver',
        runId: text(value['runId'], 'runId'),
        key: text(value['key'], 'key'),
        deliveryId: text(value['deliveryId'], 'deliveryId'),
        // SAFETY: the durability record engine checks the payload is lossless JSON.
        payload: (value['payload'] ?? null) as JsonValue,
      };
    case 'fork': {
      const at = value['at'];
      if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 1) throw invalid('at must be an integer >= 1');
      return { action: 'fork', at, newSessionId: text(value['newSessionId'], 'newSessionId') };
    }
    default:
      throw invalid('unknown action');
  }
}

/** Runs one action against `store` for `sessionId`. */
export async function runInspectorAction(store: InspectorStore, sessionId: SessionId, action: InspectorAction): Promise<InspectorActionResult> {
  switch (action.action) {
    case 'deliver': {
      if (!isDurabilityRecordStore(store)) throw invalid('this store has no durability records');
      const receipt = await deliverDurably(store, sessionId, action);
      return { ok: true, message: receipt.created ? `delivered ${action.key} to ${action.runId}` : 'already delivered (same delivery ID)' };
    }
    case 'fork': {
      const fork = await forkSession(store, sessionId, { at: action.at, newSessionId: SessionId(action.newSessionId) });
      return { ok: true, message: `forked into ${fork.sessionId}`, fork };
    }
    default:
      break;
  }
  const coordinator = await DurableSessionRecoveryCoordinator.open(store, sessionId, {
    ...(typeof store.requiresExecutionLease === 'function' ? { executionLeaseStore: store as DurableExecutionLeaseStore } : {}),
  });
  const commandId = CommandId(action.commandId);
  let result;
  switch (action.action) {
    case 'resolve-permission':
      result = await coordinator.resolvePermission({
        commandId,
        permissionRequestId: PermissionRequestId(action.permissionRequestId),
        decision: action.decision,
        ...(action.message === undefined ? {} : { message: action.message }),
      });
      break;
    case 'reconcile-tool-outcome':
      result = await coordinator.reconcileToolOutcome({ commandId, toolAttemptId: ToolAttemptId(action.toolAttemptId), outcome: action.outcome });
      break;
    case 'reconcile-model-outcome':
      result = await coordinator.reconcileModelOutcome({
        commandId,
        requestId: RequestId(action.requestId),
        turnId: TurnId(action.turnId),
        modelAttemptId: ModelAttemptId(action.modelAttemptId),
        outcome: action.outcome,
      });
      break;
  }
  return { ok: true, message: `${action.action}: ${result.status}`, headSequence: result.headSequence };
}
