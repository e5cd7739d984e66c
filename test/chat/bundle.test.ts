/**
 * The chat page's agent client bundle (`src/chat/agent-client-bundle.ts`) is generated from the
 * agent client: this fails when the committed file is stale (run `npx tsx scripts/build-chat-client.ts`).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { chatClientModule } from '../../scripts/build-chat-client.js';

describe('the chat page agent client bundle', () => {
  it('is the build of the current agent client', async () => {
    const committed = readFileSync(new URL('../../src/chat/agent-client-bundle.ts', import.meta.url), 'utf8');
    expect(committed === (await chatClientModule()), 'stale: run `npx tsx scripts/build-chat-client.ts`').toBe(true);
  });
});
