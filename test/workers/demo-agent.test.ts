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

describe('the demo agent save_note tool', () => {
  const base = 'http://agent-ledger.test';
  const auth = { authorization: `Bearer ${env.ADMIN_TOKEN}`, 'content-type': 'application/json' };
  interface LoggedEvent { type: string; data: Record<string, unknown> }

  async function events(sessionId: string): Promise<LoggedEvent[]> {
    const response = await exports.default.fetch(`${base}/v1/sessions/${sessionId}/events?limit=1000`, { headers: auth });
    return ((await response.json()) as { events: LoggedEvent[] }).events;
  }

  async function until(sessionId: string, type: string): Promise<LoggedEvent[]> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const log = await events(sessionId);
      if (log.some((event) => event.type === type)) return log;
      if (Date.now() > deadline) throw new Error(`no ${type} in ${log.map((event) => event.type).join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async function ask(sessionId: string, decision: 'allow' | 'deny'): Promise<LoggedEvent[]> {
    const sent = await exports.default.fetch(`${base}/v1/sessions/${sessionId}/requests`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ commandId: 'note-1', input: 'note: <b>buy</b> milk' }),
    });
    expect(sent.status).toBe(202);
    const waiting = await until(sessionId, 'permission_requested');
    const requested = waiting.find((event) => event.type === 'permission_requested');
    expect(requested?.data).toMatchObject({ toolName: 'save_note', message: 'Save the note "<b>buy</b> milk"?' });
    expect(waiting.some((event) => event.type === 'tool_started')).toBe(false);
    const answered = await exports.default.fetch(`${base}/v1/sessions/${sessionId}/permissions/${String(requested?.data['permissionRequestId'])}`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ decision }),
    });
    expect(answered.status).toBeLessThan(300);
    return until(sessionId, 'request_completed');
  }

  it('asks first, then records the note once and answers with it', async () => {
    const log = await ask(`note-${crypto.randomUUID()}`, 'allow');
    const completed = log.find((event) => event.type === 'tool_completed');
    expect(JSON.stringify(completed?.data)).toContain('<b>buy</b> milk');
    expect(log.filter((event) => event.type === 'tool_started')).toHaveLength(1);
    const last = log.filter((event) => event.type === 'model_request_completed').at(-1);
    expect(JSON.stringify(last?.data)).toContain('Saved your note: \\"<b>buy</b> milk\\".');
  });

  it('runs nothing when the person denies', async () => {
    const log = await ask(`note-${crypto.randomUUID()}`, 'deny');
    expect(log.some((event) => event.type === 'tool_started')).toBe(false);
    const last = log.filter((event) => event.type === 'model_request_completed').at(-1);
    expect(JSON.stringify(last?.data)).toContain('The note was not saved.');
  });
});
