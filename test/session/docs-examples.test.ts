/**
 * The code examples in docs/ that name an AI SDK provider, run.
 *
 * Every fenced block of docs/*.md that imports a provider package (`@ai-sdk/*` other than
 * `@ai-sdk/provider`, or `workers-ai-provider`) carries a marker naming the test that runs it:
 *
 *     <!-- snippet name=session-openai-compatible test=test/session/docs-examples.test.ts -->
 *     <!-- snippet name=edge-agent-workers-ai test=test/workers/docs-edge-agent.test.ts fixture=test/workers/fixtures/docs-edge-agent.ts -->
 *
 * A block with `fixture=` runs inside workerd from that module, which holds the block verbatim (its
 * `agent-ledger/*` imports pointing at the sources); this file checks it does. The Node example
 * runs here: the block is written to `.tmp/` with its `agent-ledger/*` imports pointing at the
 * sources, its `baseURL` swapped for the local chat-completions server's and its database path
 * for a temporary one, and its one free name (`mail`, the reader's mail client) defined before it.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteDurableEventStore } from '../../src/advanced.js';
import { ROOT } from '../package/harness.js';
import { readmeBlocks, type ReadmeBlock } from '../package/readme-snippets.js';
import { startChatServer, type ChatServer } from './chat-server.js';
import { readAll, types } from './helpers.js';

const PROVIDER_IMPORT = /from '(@ai-sdk\/(?!(?:provider|react|svelte|vue)')[^']+|workers-ai-provider)'/; // providers, not the UI bindings

interface DocExample extends ReadmeBlock {
  doc: string;
  attributes: Map<string, string>;
}

function docExamples(): DocExample[] {
  const docs = readdirSync(path.join(ROOT, 'docs')).filter((name) => name.endsWith('.md'));
  return docs.flatMap((name) =>
    readmeBlocks(readFileSync(path.join(ROOT, 'docs', name), 'utf8')).map((block) => {
      const attributes = new Map<string, string>();
      for (const match of (block.marker ?? '').matchAll(/(\w+)=(\S+)/g)) attributes.set(match[1] ?? '', match[2] ?? '');
      return { ...block, doc: `docs/${name}`, attributes };
    }),
  );
}

/** The block with its `agent-ledger/<entry>` imports pointing at `src/<entry>.ts` from `fromDir`. */
function withSourceImports(code: string, fromDir: string): string {
  return code.replace(/from 'agent-ledger\/([a-z-]+)'/g, (_, entry: string) => {
    const target = path.relative(fromDir, path.join(ROOT, 'src', `${entry}.js`)).split(path.sep).join('/');
    return `from '${target.startsWith('.') ? target : `./${target}`}'`;
  });
}

describe('docs examples that name a provider', () => {
  const examples = docExamples().filter((block) => PROVIDER_IMPORT.test(block.code));

  it('are marked with the test that runs them (and the fixture holding the block verbatim)', () => {
    expect(examples.map((example) => example.attributes.get('name')).sort()).toEqual(['edge-agent-workers-ai', 'session-openai-compatible']);
    for (const example of examples) {
      const where = `${example.doc} line ${example.line}`;
      const name = example.attributes.get('name');
      const test = example.attributes.get('test');
      expect(test, `${where}: <!-- snippet name=... test=... -->`).toBeDefined();
      expect(existsSync(path.join(ROOT, test ?? '')), `${where}: ${String(test)} exists`).toBe(true);
      expect(readFileSync(path.join(ROOT, test ?? ''), 'utf8'), `${where}: ${String(test)} names ${String(name)}`).toContain(String(name));
      const fixture = example.attributes.get('fixture');
      if (fixture !== undefined) {
        const source = readFileSync(path.join(ROOT, fixture), 'utf8');
        expect(source, `${fixture} holds the block of ${where} verbatim`).toContain(withSourceImports(example.code, path.dirname(path.join(ROOT, fixture))));
      }
    }
  });

  describe('session-openai-compatible (docs/session.md)', () => {
    let server: ChatServer;
    let dir: string;
    beforeAll(async () => {
      server = await startChatServer();
      dir = mkdtempSync(path.join(tmpdir(), 'al-docs-'));
    });
    afterAll(async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('runs against a local chat-completions server: the weather tool, the answer, and a resume with nothing to do', async () => {
      const example = examples.find((block) => block.attributes.get('name') === 'session-openai-compatible');
      expect(example).toBeDefined();
      const code = example?.code ?? '';
      const database = path.join(dir, 'agent.db');
      for (const literal of ["'http://127.0.0.1:8080/v1'", "'./agent.db'"]) expect(code).toContain(literal);
      const outDir = path.join(ROOT, '.tmp', 'docs-examples');
      mkdirSync(outDir, { recursive: true });
      const imports = code.split('\n').filter((line) => line.startsWith('import '));
      const body = code.split('\n').filter((line) => !line.startsWith('import ')).join('\n');
      const program = [
        ...imports.map((line) => withSourceImports(line, outDir)),
        '// Provided by the test: the reader\'s mail client.',
        'const mail = { send: async (input: { to: string }, options: { fencingToken?: number }) => ({ sent: input.to, ...options }) };',
        body.replace("'http://127.0.0.1:8080/v1'", JSON.stringify(server.baseURL)).replace("'./agent.db'", JSON.stringify(database)),
      ].join('\n');
      const file = path.join(outDir, `session-openai-compatible-${process.pid}.ts`);
      writeFileSync(file, program);
      try {
        await import(pathToFileURL(file).href);
      } finally {
        rmSync(file, { force: true });
      }

      const store = new SqliteDurableEventStore(database);
      try {
        const events = await readAll(store, 'support-42');
        expect(types(events)).toContain('request_completed');
        expect(types(events).filter((type) => type === 'tool_completed')).toHaveLength(1);
        const started = events.find((event) => event.type === 'model_request_started');
        expect(started?.data).toMatchObject({ model: 'qwen', modelIdentity: { provider: 'local.chat', api: 'ai-sdk.language-model.v4' } });
        const completed = events.filter((event) => event.type === 'request_completed').at(-1);
        expect(completed?.data).toMatchObject({ output: 'The weather in Paris is sunny.' });
      } finally {
        store.close();
      }
      const requests = server.received.filter((request) => request.model === 'qwen');
      expect(requests.map((request) => request.tools?.map((tool) => tool.function.name))).toEqual([
        ['getWeather', 'sendEmail'],
        ['getWeather', 'sendEmail'],
      ]);
    });
  });
});
