/**
 * The seed's recovery scenario: a real mounted runtime tool with two steps, whose effects are
 * counted outside the store, dies right after its first step is recorded; a recovery of the same
 * run executes only the second effect.
 *
 * - In process, against the memory store (the "crash" is a throw right after the first step).
 * - In child processes (`fixtures/run-tool.ts`, which calls `process.exit` right after the first
 *   step), against SQLite and JSONL. Those variants run as soon as the backend implements the
 *   durability ledger; until then they are skipped with that reason in their title.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MemoryDurableEventStore } from '../../src/adapters/memory/memory-store.js';
import { JsonlDurableEventStore } from '../../src/adapters/node/jsonl/jsonl-store.js';
import { SqliteDurableEventStore } from '../../src/adapters/node/sqlite/sqlite-store.js';
import { createAgentRuntime } from '../../src/core/runtime/agent-runtime.js';
import { mountTwoStepTool, TWO_STEP_AGENT, TWO_STEP_TOOL } from './fixtures/two-step-tool.js';
import { newSessionId } from './helpers.js';
import { tsChildArgs } from '../ts-child.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
const fixture = path.join(here, 'fixtures', 'run-tool.ts');

class SimulatedCrash extends Error {}

describe('seed recovery, in process (memory store)', () => {
  it('replays the first step and executes only the second effect', async () => {
    const store = new MemoryDurableEventStore();
    const sessionId = newSessionId('seed');
    const effects: string[] = [];
    const call = { sessionId, runId: 'seed-run', agent: TWO_STEP_AGENT, toolName: TWO_STEP_TOOL, toolCallId: 'seed-call', input: { label: 'seed' } };

    const dying = createAgentRuntime({ store, durability: true });
    mountTwoStepTool(dying, {
      effect: (label) => effects.push(label),
      afterFirstStep: () => {
        throw new SimulatedCrash('exit right after the first recorded step');
      },
    });
    await expect(dying.callTool(call)).rejects.toBeInstanceOf(SimulatedCrash);
    expect(effects).toEqual(['first']);

    const recovering = createAgentRuntime({ store, durability: true });
    mountTwoStepTool(recovering, { effect: (label) => effects.push(label) });
    expect(await recovering.recover({ ...call, decision: 'replay' })).toEqual({
      first: { step: 1, label: 'seed' },
      second: { step: 2, label: 'seed' },
    });
    expect(effects).toEqual(['first', 'second']);
  });
});

interface ChildResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runChild(args: string[]): Promise<ChildResult> {
  const child = spawn(process.execPath, [...tsChildArgs(fixture), ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const backends = [
  {
    name: 'sqlite',
    location: (dir: string) => path.join(dir, 'ledger.db'),
  },
  {
    name: 'jsonl',
    location: (dir: string) => path.join(dir, 'sessions'),
  },
] as const;

describe.each(backends)('seed recovery across processes ($name)', ({ name, location }) => {
  it('implements the durability ledger', () => {
    const prototype = name === 'sqlite' ? SqliteDurableEventStore.prototype : JsonlDurableEventStore.prototype;
    expect(typeof prototype.recordDurability).toBe('function');
  });

  it(
    'a second process recovers the run and executes only the second effect',
    async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), `durability-seed-${name}-`));
      try {
        const counter = path.join(dir, 'effects.txt');
        const common = [name, location(dir), 'seed-session', counter];
        const crashed = await runChild([...common, 'call', '--exit-after-first-step']);
        expect(crashed.code, crashed.stderr).toBe(0);
        expect(crashed.stdout).not.toContain('result');
        expect(readFileSync(counter, 'utf8')).toBe('first\n');

        const recovered = await runChild([...common, 'recover']);
        expect(recovered.code, recovered.stderr).toBe(0);
        expect(recovered.stdout).toContain('result {"first":{"step":1,"label":"seed"},"second":{"step":2,"label":"seed"}}');
        expect(readFileSync(counter, 'utf8')).toBe('first\nsecond\n');

        // A third execution replays both steps: no effect at all.
        const replayed = await runChild([...common, 'recover']);
        expect(replayed.code, replayed.stderr).toBe(0);
        expect(readFileSync(counter, 'utf8')).toBe('first\nsecond\n');
      } finally {
        if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
