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
export {
  createSession,
  resumeSession,
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
