/**
 * `agent-ledger/session`: the agent Session that writes the ledger.
 *
 * `createSession` / `resumeSession` return a {@link Session} that runs an agent loop over an AI
 * SDK language model (`LanguageModelV3`) and tools, committing every lifecycle fact through the
 * journal, so a crash at any point leaves a log the recovery plan can act on. Runtime-neutral: it
 * runs on Node and inside a Durable Object with any `DurableEventStore`. `createScriptedModel` is
 * a deterministic model for tests, examples and demos. See `docs/session.md`.
 *
 * @example
 * const session = await createSession({ model, tools: { add }, durableEventStore: store });
 * const result = await session.run('What is 2 + 3?');
 * console.log(result.output);
 */
import { MemoryDurableEventStore } from './adapters/memory/memory-store.js';
import { createSession as createStoredSession, resumeSession as resumeStoredSession } from './session/session.js';
import type { ResumeSessionOptions, Session, SessionOptions } from './session/types.js';

/**
 * Starts a new session (see `docs/session.md`). Without `durableEventStore` the Session writes to a
 * fresh `MemoryDurableEventStore`: same rules, nothing durable.
 *
 * @throws SessionDurableRecorderError when the log already holds events (use `resumeSession`)
 */
export function createSession(options: SessionOptions): Promise<Session> {
  return createStoredSession({ ...options, durableEventStore: options.durableEventStore ?? new MemoryDurableEventStore() });
}

/**
 * Resumes a session from its log: `none` -> idle; an accepted Request with a complete snapshot ->
 * continued under the same `requestId`; anything else only as the recovery policy maps it, else
 * `DurableSessionRecoveryRequiredError` carrying the plan. Without `durableEventStore` it reads a
 * fresh (empty) `MemoryDurableEventStore`, so it refuses: use the store the session was written to.
 */
export function resumeSession(options: ResumeSessionOptions): Promise<Session> {
  return resumeStoredSession({ ...options, durableEventStore: options.durableEventStore ?? new MemoryDurableEventStore() });
}

export {
  SAFE_RECOVERY_POLICY,
  AUTO_RECOVERY_POLICY,
  MAX_MODEL_RECALLS_PER_TURN,
  recallModelOnUnknownOutcome,
  defineTool,
  recoveryPlanOf,
} from './session/session.js';
export { createScriptedModel } from './session/scripted-model.js';
export type * from './session/types.js';
export type * from './session/scripted-model-types.js';
