#!/usr/bin/env node
// Watch the demo agent of `npm start` run: `node scripts/agent-demo.mjs "your question"`.
//
// 1. Subscribes to a fresh session over the WebSocket route (admin token from `.dev.vars`).
// 2. After the replay (`caught_up`), posts the question to `POST /v1/sessions/:id/requests`.
// 3. Prints token deltas as they stream, tool progress, and each durable event as it commits,
//    then exits when the request ends. Nothing here is needed by the Worker; it is a viewer.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';

const root = process.cwd();
const port = process.env.PORT ?? '8787';
const base = `http://127.0.0.1:${port}`;
const question = process.argv.slice(2).join(' ') || 'How long is this sentence, really?';
const vars = Object.fromEntries(
  readFileSync(path.join(root, '.dev.vars'), 'utf8')
    .split(/\r?\n/)
    .map((line) => /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line))
    .filter(Boolean)
    .map((match) => [match[1], match[2]]),
);
const token = vars.ADMIN_TOKEN;
if (!token) {
  console.error('No ADMIN_TOKEN in .dev.vars: run `npm start` first.');
  process.exit(2);
}
const sessionId = `demo-${Date.now().toString(36)}`;
const auth = { Authorization: `Bearer ${token}` };
const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/sessions/${sessionId}/subscribe`, { headers: auth });
const dim = (text) => (process.stdout.isTTY ? `\x1b[2m${text}\x1b[0m` : text);
let midLine = false;
const line = (text) => {
  if (midLine) process.stdout.write('\n');
  midLine = false;
  console.log(text);
};

ws.on('message', async (data) => {
  const frame = JSON.parse(String(data));
  if (frame.type === 'caught_up') {
    line(dim(`subscribed to ${sessionId}; asking: ${question}`));
    const response = await fetch(`${base}/v1/sessions/${sessionId}/requests`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ commandId: 'demo-1', input: question }),
    });
    line(dim(`POST /requests -> ${response.status} ${await response.text()}`));
  } else if (frame.type === 'text_delta' || frame.type === 'partial_response') {
    process.stdout.write(frame.type === 'text_delta' ? frame.delta : frame.text);
    midLine = true;
  } else if (frame.type === 'tool_progress') {
    line(dim(`  tool ${frame.toolName} progress ${JSON.stringify(frame.data)}`));
  } else if (frame.type === 'event') {
    line(dim(`  #${frame.event.sequence} ${frame.event.type}`));
    if (['request_completed', 'request_failed', 'request_interrupted'].includes(frame.event.type)) ws.close(1000);
  } else if (frame.type === 'error') {
    line(`error: ${frame.code} ${frame.message}`);
  }
});
ws.on('close', () => process.exit(0));
ws.on('error', (error) => {
  console.error(`Could not reach the Worker at ${base} (${error.message}); is \`npm start\` running?`);
  process.exit(1);
});
