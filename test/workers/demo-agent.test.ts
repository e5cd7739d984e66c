/**
 * Inside workerd, against the Worker `npm start` serves (`worker/index.ts`, project `workers`): the
 * demo agent (`worker/demo-agent.ts`) runs a whole request in the session object — token deltas
 * over the WebSocket, the `word_stats` tool, the final answer — with no network and no key.
 */
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { SubscriptionFrame } from '../../src/protocol/frames.js';
import { parseSubscriptionFrame } from '../../src/protocol/frames.js';

describe('the demo agent of npm start', () => {
  it('streams a full run over a WebSocket', async () => {
    const sessionId = `demo-${crypto.randomUUID()}`;
    const base = 'http://agent-ledger.test';
    const auth = { authorization: `Bearer ${env.ADMIN_TOKEN}` };
    const upgrade = await exports.default.fetch(`${base}/v1/sessions/${sessionId}/subscribe`, { headers: { ...auth, upgrade: 'websocket' } });
    const ws = upgrade.webSocket;
    expect(ws).toBeTruthy();
    const frames: SubscriptionFrame[] = [];
    ws?.addEventListener('message', (event) => {
      const frame = parseSubscriptionFrame(String(event.data));
      if (frame !== undefined) frames.push(frame);
    });
    ws?.accept();
    const response = await exports.default.fetch(`${base}/v1/sessions/${sessionId}/requests`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ commandId: 'demo-1', input: 'count these five words' }),
    });
    expect(response.status).toBe(202);
    const deadline = Date.now() + 20_000;
    while (!frames.some((f) => f.type === 'event' && f.event.type === 'request_completed') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const text = frames.map((f) => (f.type === 'text_delta' ? f.delta : '')).join('');
    expect(text).toBe(
      'Let me count the words in your message.Your message has 4 words and 19 letters; the longest word is "count". ' +
        '(This is the deterministic demo model: mount any AI SDK provider instead.)',
    );
    expect(frames.some((f) => f.type === 'tool_progress')).toBe(true);
    expect(frames.filter((f) => f.type === 'event').map((f) => (f.type === 'event' ? f.event.type : ''))).toContain('tool_completed');
    ws?.close(1000);
  });
});
