// `npm test`: exits 0 only when (1) a run completes and (2) a run killed with SIGKILL in the middle
// of its work resumes with `resumeSession` and finishes, with the email sent exactly once.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { JsonlDurableEventStore } from 'agent-ledger/advanced';
import { resumeSession, SAFE_RECOVERY_POLICY } from 'agent-ledger/session';
import { agentOptions } from './agent.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ANSWER = 'Invoice INV-7 (120 EUR) was sent to ops@example.com.';
const root = mkdtempSync(path.join(tmpdir(), 'node-agent-'));
const outbox = (dir) => (existsSync(path.join(dir, 'outbox.log')) ? readFileSync(path.join(dir, 'outbox.log'), 'utf8').trim().split('\n') : []);

function fail(message) {
  console.error(`FAIL: ${message}`);
  rmSync(root, { recursive: true, force: true });
  process.exit(1);
}

try {
  // 1. A complete run.
  const full = path.join(root, 'full');
  const run = spawnSync(process.execPath, [path.join(here, 'agent.mjs'), full], { encoding: 'utf8' });
  if (run.status !== 0) fail(`the agent exited with ${run.status}: ${run.stderr}`);
  if (!run.stdout.includes(`answer: ${ANSWER}`)) fail(`unexpected output:\n${run.stdout}`);
  if (outbox(full).length !== 1) fail('the email was not sent exactly once');
  console.log('complete run: ok');

  // 2. Killed right after event 19, the tool_completed of send_email, before its Turn ends: the
  //    resume continues that Turn in place and never sends the email again.
  const crash = path.join(root, 'crash');
  const killed = spawnSync(process.execPath, [path.join(here, 'agent.mjs'), crash, '--crash-after', '19'], { encoding: 'utf8' });
  if (killed.signal !== 'SIGKILL') fail(`the agent was not killed (status ${killed.status}, signal ${killed.signal}): ${killed.stderr}`);
  const store = new JsonlDurableEventStore(path.join(crash, 'ledger'));
  const session = await resumeSession({ ...agentOptions(crash, store), recoveryPolicy: SAFE_RECOVERY_POLICY });
  const result = await session.resumedRequest?.result;
  await session.close();
  const log = await store.read('invoice-agent', { limit: 1000 });
  await store.close();
  if (result?.output !== ANSWER) fail(`the resumed request answered ${JSON.stringify(result)}`);
  if (outbox(crash).length !== 1) fail(`the email was sent ${outbox(crash).length} times`);
  if (log.events[18]?.type !== 'tool_completed' || log.events[18]?.data.toolName !== 'send_email') fail('the kill point moved: event 19 is not the email tool_completed');
  console.log('kill -9 and resume: ok');
  rmSync(root, { recursive: true, force: true });
} catch (error) {
  fail(error instanceof Error ? error.stack : String(error));
}
