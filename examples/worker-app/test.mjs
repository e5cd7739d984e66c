// The example's own test (`npm test`): type-check, bundle as a deployment would, then run it under
// `wrangler dev` on 127.0.0.1 and use it over HTTP. Exits 0 only if every step worked.
//
// Offline: no Cloudflare account, no telemetry, no `request.cf` download. wrangler dev runs in its
// own process group and is killed at the end, also on failure.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const ADMIN_TOKEN = 'example-admin-token-0123456789abcdef';
const TOKEN_SECRET = 'example-token-secret-0123456789abcdef';
const env = {
  ...process.env,
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  WRANGLER_SEND_METRICS: 'false',
  WRANGLER_HIDE_BANNER: 'true',
  CI: 'true',
};
for (const name of ['CLOUDFLARE_API_TOKEN', 'CLOUDFLARE_API_KEY', 'CLOUDFLARE_ACCOUNT_ID']) delete env[name];

function check(condition, message) {
  if (!condition) throw new Error(message);
}

function step(title, command, args) {
  console.log(`> ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { env, encoding: 'utf8' });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  check(result.status === 0, `${title} failed (exit ${result.status}):\n${output}`);
  return output;
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function call(base, method, route, body) {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  return { status: response.status, text, json: () => JSON.parse(text) };
}

step('type-check', 'tsc', ['-p', '.']);
const outdir = mkdtempSync(path.join(tmpdir(), 'worker-app-bundle-'));
try {
  const dry = step('bundle', 'wrangler', ['deploy', '--dry-run', '--outdir', outdir]);
  check(/env\.AGENTS \(Agents\)\s+Durable Object/.test(dry), `the bundle does not bind AGENTS to Agents:\n${dry}`);
} finally {
  rmSync(outdir, { recursive: true, force: true });
}

const persist = mkdtempSync(path.join(tmpdir(), 'worker-app-state-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
let log = '';
const dev = spawn(
  'wrangler',
  ['dev', '--ip', '127.0.0.1', '--port', String(port), '--persist-to', persist, '--show-interactive-dev-session=false',
    '--var', `ADMIN_TOKEN:${ADMIN_TOKEN}`, '--var', `TOKEN_SECRET:${TOKEN_SECRET}`],
  { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
);
dev.stdout.on('data', (chunk) => (log += chunk));
dev.stderr.on('data', (chunk) => (log += chunk));

function stopDev() {
  try {
    process.kill(-dev.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

try {
  const deadline = Date.now() + 90_000;
  for (;;) {
    check(dev.exitCode === null, `wrangler dev exited early:\n${log}`);
    check(Date.now() < deadline, `wrangler dev did not answer in time:\n${log}`);
    try {
      const health = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2_000) });
      if (health.ok) break;
    } catch {
      // not up yet
    }
    await sleep(250);
  }

  const mine = await call(base, 'GET', '/');
  check(mine.status === 200 && mine.text === 'my agents app\n', `the app's own route: ${mine.status} ${mine.text}`);

  const started = await call(base, 'POST', '/v1/sessions/customer-42/runs/run-1/tool-calls', {
    agent: 'support',
    toolName: 'lookupOrder',
    toolCallId: 'call-1',
    input: { orderId: 'A-1001' },
  });
  check(started.status === 202, `start the tool call: ${started.status} ${started.text}`);

  let run;
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const answer = await call(base, 'GET', '/v1/sessions/customer-42/runs/run-1');
    check(answer.status === 200, `read the run: ${answer.status} ${answer.text}`);
    run = answer.json();
    if (run.toolCalls?.[0]?.status === 'completed') break;
    await sleep(100);
  }
  const result = run?.toolCalls?.[0]?.result;
  check(result?.answer === 'order A-1001 is shipped', `tool result: ${JSON.stringify(run)}`);

  // The same call again is idempotent: the recorded outcome, not a second execution.
  const again = await call(base, 'POST', '/v1/sessions/customer-42/runs/run-1/tool-calls', {
    agent: 'support',
    toolName: 'lookupOrder',
    toolCallId: 'call-1',
    input: { orderId: 'A-1001' },
  });
  check(again.status === 200 || again.status === 202, `repeat the call: ${again.status} ${again.text}`);

  const unauthenticated = await fetch(`${base}/v1/sessions/customer-42/events`);
  check(unauthenticated.status === 401, `no token must be refused, got ${unauthenticated.status}`);
  await unauthenticated.body?.cancel();
  console.log(`worker-app: ok (${result.answer})`);
} finally {
  stopDev();
  rmSync(persist, { recursive: true, force: true });
}
