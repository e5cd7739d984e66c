/**
 * The local Worker harness (local-worker.ts) runs one fixed build of the Worker: a source file
 * changing under a running Worker (`npm pack` rewrites `package.json`, an edit lands in `src/`)
 * neither reloads it nor breaks the requests in flight. A fixture Worker in a temporary directory
 * stands in for the repository, so this test can edit its sources.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalWorker, type LocalWorker } from './local-worker.js';

const WORKER_SOURCE = `import { VERSION } from './version.js';
export default {
  async fetch(request) {
    let bytes = 0;
    if (request.body !== null) {
      for await (const chunk of request.body) bytes += chunk.byteLength;
    }
    return Response.json({ version: VERSION, bytes });
  },
};
`;

let dir: string;
let worker: LocalWorker;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'agent-ledger-harness-'));
  await writeFile(path.join(dir, 'wrangler.toml'), 'name = "harness-fixture"\nmain = "worker.js"\ncompatibility_date = "2026-04-20"\n');
  await writeFile(path.join(dir, 'worker.js'), WORKER_SOURCE);
  await writeFile(path.join(dir, 'version.js'), 'export const VERSION = 1;\n');
  worker = await startLocalWorker({ config: path.join(dir, 'wrangler.toml') });
});

afterAll(async () => {
  await worker?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('the local Worker harness', () => {
  it('keeps serving the build it started with while the sources change, requests in flight included', async () => {
    const chunk = new Uint8Array(64 * 1024);
    const rounds = 40;
    let sent = 0;
    let edits = 0;
    // An upload that spans the edits: each pull writes the next chunk once the Worker has read
    // the previous one, and rewrites a module the Worker imports every few chunks (as an editor
    // or `npm pack` would), with a pause long enough for a file watcher to notice.
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent === rounds) {
          controller.close();
          return;
        }
        if (sent % 8 === 0) {
          edits += 1;
          await writeFile(path.join(dir, 'version.js'), `export const VERSION = ${edits + 1};\n`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        sent += 1;
        controller.enqueue(chunk);
      },
    });
    const response = await fetch(worker.href('/upload'), { method: 'POST', body, duplex: 'half' } as RequestInit);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ version: 1, bytes: rounds * chunk.byteLength });
    const after = await fetch(worker.href('/'));
    expect(await after.json()).toEqual({ version: 1, bytes: 0 });
  });
});
