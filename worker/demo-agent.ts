/**
 * The demo agent of the Worker that `npm start` serves: a deterministic local model (the scripted
 * `LanguageModelV3` of `agent-ledger/session`; no network, no key) and one pure tool, so a new
 * user sees a whole run — token deltas, a tool call, the durable events — stream over a WebSocket
 * (`node scripts/agent-demo.mjs "your question"`).
 *
 * The model answers in two turns: it streams a short sentence and calls a tool, then streams an
 * answer built from the tool's result. A message that starts with `note:` calls `save_note`, which
 * needs a person's permission and has a side effect: it records the note as a durable step of the
 * session (so a retry never records it twice) and returns it. Any other message calls `word_stats`
 * (pure) on the user's text. Replace `model` with any AI
 * SDK provider (Workers AI through `workers-ai-provider`, an OpenAI-compatible endpoint with a
 * secret from `this.env`) to run a real agent the same way.
 */
import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import type { SessionAgentMount } from '../src/adapters/durable-object/agent-rpc.js';
import { EDGE_AUTO_RECOVERY_POLICY } from '../src/edge/agent-host.js';
import { createScriptedModel } from '../src/session/scripted-model.js';
import type { ScriptedModelStep } from '../src/session/scripted-model-types.js';
import { defineTool } from '../src/session/session.js';

/** Pause between streamed parts, so a person can watch the deltas arrive. */
const DEMO_PART_DELAY_MS = 25;

function lastUserText(prompt: LanguageModelV3Prompt): string {
  for (let index = prompt.length - 1; index >= 0; index--) {
    const message = prompt[index];
    if (message?.role === 'user') return message.content.map((part) => (part.type === 'text' ? part.text : '')).join(' ').trim();
  }
  return '';
}

/** The prefix of a message that asks the demo agent to save a note. */
export const DEMO_NOTE_PREFIX = 'note:';

function demoStep(prompt: LanguageModelV3Prompt): ScriptedModelStep {
  const last = prompt[prompt.length - 1];
  if (last?.role === 'tool') {
    const part = last.content[0];
    const value = part?.type === 'tool-result' && part.output.type === 'json' ? part.output.value : null;
    if (part?.type === 'tool-result' && part.toolName === 'save_note') {
      const saved = (value ?? {}) as { saved?: string };
      return {
        text: typeof saved.saved === 'string' ? `Saved your note: "${saved.saved}".` : 'The note was not saved.',
      };
    }
    const stats = (value ?? {}) as { words?: number; letters?: number; longest?: string };
    return {
      text:
        `Your message has ${stats.words ?? 0} words and ${stats.letters ?? 0} letters; the longest word is ` +
        `"${stats.longest ?? ''}". (This is the deterministic demo model: mount any AI SDK provider instead.)`,
    };
  }
  const text = lastUserText(prompt);
  if (text.toLowerCase().startsWith(DEMO_NOTE_PREFIX)) {
    return {
      text: 'I will save this note once you allow it.',
      toolCalls: [{ toolName: 'save_note', input: { note: text.slice(DEMO_NOTE_PREFIX.length).trim() } }],
    };
  }
  return {
    text: 'Let me count the words in your message.',
    toolCalls: [{ toolName: 'word_stats', input: { text } }],
  };
}

/** The demo mount (see the module header). */
export function demoAgent(): SessionAgentMount {
  return {
    model: createScriptedModel(({ prompt }) => demoStep(prompt), {
      provider: 'agent-ledger-demo',
      modelId: 'deterministic-demo',
      chunkSize: 6,
      betweenParts: () => new Promise((resolve) => setTimeout(resolve, DEMO_PART_DELAY_MS)),
    }),
    system: 'You are the agent-ledger demo agent.',
    // A restart or eviction mid answer calls the model again instead of parking for an operator (docs/edge-agents.md).
    recoveryPolicy: EDGE_AUTO_RECOVERY_POLICY,
    tools: {
      word_stats: defineTool({
        description: 'Counts the words and letters of a text.',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        sideEffect: 'pure',
        execute: (input: { text: string }, context) => {
          const words = input.text.split(/\s+/).filter((word) => word.length > 0);
          context.progress({ counted: words.length });
          const longest = words.reduce((best, word) => (word.length > best.length ? word : best), '');
          return { words: words.length, letters: input.text.replace(/[^\p{L}]/gu, '').length, longest };
        },
      }),
      save_note: defineTool({
        description: 'Saves a note in the session (asks the person first).',
        inputSchema: { type: 'object', properties: { note: { type: 'string' } }, required: ['note'] },
        sideEffect: 'idempotent',
        needsPermission: true,
        permissionMessage: (input: { note: string }) => `Save the note "${input.note}"?`,
        execute: async (input: { note: string }, context) => {
          context.progress({ saving: input.note.length });
          const record = { saved: input.note };
          // The side effect: a durable step of this tool call (replayed, never redone, by a retry).
          return context.step === undefined ? record : await context.step('record-note', () => record);
        },
      }),
    },
  };
}
