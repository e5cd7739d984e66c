/**
 * Shared by large-checkpoint.test.ts and large-checkpoint.deep.test.ts: a client whose checkpoint
 * POSTs are recorded, and byte patterns for records.
 */
import { HttpDurableEventStore } from '../../src/client.js';
import type { LocalWorker } from './local-worker.js';

/** One checkpoint POST as {@link recordingClient} saw it. */
export interface RecordedCheckpointPost {
  bytes: number;
  extension: boolean;
  slice: boolean;
}

/** A client whose checkpoint POSTs are recorded (body length, extension or not, slice or not) and optionally rewritten. */
export function recordingClient(worker: LocalWorker, rewrite?: (body: Record<string, unknown>) => Record<string, unknown>) {
  const posts: RecordedCheckpointPost[] = [];
  const client = new HttpDurableEventStore({
    baseUrl: worker.url,
    token: worker.adminToken,
    fetch: async (input, init) => {
      if (init?.method === 'POST' && String(input).endsWith('/checkpoint') && typeof init.body === 'string') {
        const parsed = JSON.parse(init.body) as Record<string, unknown>;
        posts.push({ bytes: init.body.length, extension: parsed['extendsBytes'] !== undefined, slice: parsed['upload'] !== undefined });
        if (rewrite !== undefined) return fetch(input, { ...init, body: JSON.stringify(rewrite(parsed)) });
      }
      return fetch(input, init);
    },
  });
  return { client, posts };
}

/** `size` bytes, every `step`-th one set from its index (cheap to build for tens of MiB). */
export function patterned(size: number, step: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let index = 0; index < size; index += step) bytes[index] = (index * 11) & 255;
  return bytes;
}

/** True when `a` holds exactly the bytes of `b`. */
export const sameBytes = (a: Uint8Array | undefined, b: Uint8Array): boolean => a !== undefined && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
