/**
 * Child process of `short-lived-open.bench.ts`: one short-lived open, as a CLI call or a
 * serverless invocation makes it. Arguments: <jsonl root> <session id>. Opens a fresh JSONL store
 * and a journal with the default checkpoint policy, closes the store and ends the process at once
 * (`process.exit`). Prints one JSON line: the open's time in milliseconds, the checkpoint outcome,
 * and the checkpoint write the open made (if any), as `onWrite` reported it.
 */
import { JsonlDurableEventStore } from '../../src/adapters/node/jsonl/jsonl-store.js';
import type { DurableCheckpointWriteInfo } from '../../src/core/checkpoint/index.js';
import { DurableSessionJournal } from '../../src/core/journal/index.js';
import { SessionId } from '../../src/protocol/ids.js';

const [root, session] = process.argv.slice(2);
if (root === undefined || session === undefined) throw new Error('usage: open-once.ts <jsonl root> <session>');
const store = new JsonlDurableEventStore(root);
const writes: DurableCheckpointWriteInfo[] = [];
const start = performance.now();
const journal = await DurableSessionJournal.open(store, SessionId(session), {
  pageSize: 1000,
  storeTimeoutMs: 300_000,
  checkpoints: { onWrite: (write) => writes.push(write), onWriteError: (error) => console.error(error) },
});
const ms = performance.now() - start;
await store.close();
process.stdout.write(`${JSON.stringify({ ms, head: journal.getHeadSequence(), outcome: journal.getCheckpointOutcome(), writes })}\n`);
process.exit(0);
