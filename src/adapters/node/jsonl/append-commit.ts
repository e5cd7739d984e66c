/**
 * Judging and writing one commit group, under the session lock.
 *
 * 1. Catch the cached head up with the file and read the lease state (once per group).
 * 2. For each append still wanted, in arrival order: let the core `planAppend` check the fence
 *    and its own `expectedLastSequence` against the running head, run the `beforeCommit` test
 *    hook, and serialize the batch as one line. A refused append gets its error; the head only
 *    moves for accepted ones. Once the group holds {@link MAX_GROUP_BYTES}, the remaining appends
 *    are deferred, unjudged, to the next group.
 * 3. Write every accepted line with one positional write and one fsync (synchronous calls; see
 *    `line-file.ts`).
 * The lines are built from the encodings `planAppend` already produced for its byte limits.
 */
import { planAppend, type LeaseState } from '../../../core/log-engine.js';
import type { DurableAppendResult, StoreTestHooks } from '../../../core/store.js';
import { DurableEventStoreError } from '../../../protocol/errors.js';
import type { SessionId } from '../../../protocol/ids.js';
import type { AppendOutcome, AppendRequest } from './group-commit.js';
import type { LeaseFile } from './lease-file.js';
import type { BatchSpan, SessionLog } from './session-file.js';

/** Bytes after which a commit group stops taking appends; the rest wait for the next group. */
export const MAX_GROUP_BYTES = 4 * 1024 * 1024;

const CANCELLED: AppendOutcome = { kind: 'failed', error: undefined };

/** What a group commit works on. */
interface CommitTarget {
  id: SessionId;
  log: SessionLog;
  lease: LeaseFile;
}

/**
 * Judges and writes one group; one outcome per request, in order. Never throws. Synchronous
 * (an array) unless the catch-up has new bytes to read (a promise).
 */
export function commitAppendGroup(
  target: CommitTarget,
  requests: readonly AppendRequest[],
  clock: () => number,
  hooks: StoreTestHooks,
): AppendOutcome[] | Promise<AppendOutcome[]> {
  // A cancelled append was already rejected by the queue; this outcome is never reported.
  if (allCancelled(requests)) return requests.map(() => CANCELLED);
  let reading: Promise<void> | undefined;
  try {
    reading = target.log.catchUp();
  } catch (error) {
    return requests.map(() => ({ kind: 'failed', error }));
  }
  if (reading === undefined) return judgeAndWrite(target, requests, clock, hooks);
  return reading.then(
    () => judgeAndWrite(target, requests, clock, hooks),
    (error: unknown) => requests.map((): AppendOutcome => ({ kind: 'failed', error })),
  );
}

function allCancelled(requests: readonly AppendRequest[]): boolean {
  for (const request of requests) if (!request.cancelled) return false;
  return true;
}

/** Steps 2 and 3 of the module header, once the cache is current. */
function judgeAndWrite(
  target: CommitTarget,
  requests: readonly AppendRequest[],
  clock: () => number,
  hooks: StoreTestHooks,
): AppendOutcome[] {
  const outcomes: AppendOutcome[] = new Array<AppendOutcome>(requests.length).fill(CANCELLED);
  let lease: LeaseState | null;
  try {
    lease = target.lease.read();
  } catch (error) {
    return requests.map(() => ({ kind: 'failed', error }));
  }
  const nowMs = clock();
  let head = target.log.head;
  const lines: Buffer[] = [];
  const spans: BatchSpan[] = [];
  const accepted: Array<{ index: number; result: DurableAppendResult }> = [];
  let groupBytes = 0;
  for (let index = 0; index < requests.length; index++) {
    // SAFETY: `index` is within `requests`.
    const request = requests[index] as AppendRequest;
    if (request.cancelled) continue;
    if (groupBytes >= MAX_GROUP_BYTES) {
      outcomes[index] = { kind: 'deferred' };
      continue;
    }
    try {
      const encodings: string[] = [];
      const result = planAppend({
        sessionId: target.id,
        drafts: request.drafts,
        options: request.options,
        head,
        lease,
        nowMs,
        encodings,
      });
      try {
        hooks.beforeCommit?.(target.id);
      } catch (error) {
        throw new DurableEventStoreError('DURABLE_EVENT_WRITE_FAILED', 'the commit failed before anything was written', {
          cause: error,
        });
      }
      // The engine's own encoding of each event (what the byte limits were checked on) forms the
      // line, exactly as `JSON.stringify(result.events)` would.
      const line = Buffer.from(`[${encodings.join(',')}]\n`);
      lines.push(line);
      spans.push({
        first: (result.previousSequence ?? 0) + 1,
        last: result.lastSequence,
        bytes: line.length,
        lastEventId: result.events[result.events.length - 1]?.eventId ?? '',
      });
      accepted.push({ index, result });
      groupBytes += line.length;
      head = result.lastSequence;
    } catch (error) {
      outcomes[index] = { kind: 'failed', error };
    }
  }
  if (accepted.length === 0) return outcomes;
  try {
    // SAFETY: `accepted` is non-empty, so `lines` is too.
    target.log.appendSync(lines.length === 1 ? (lines[0] as Buffer) : Buffer.concat(lines), spans);
    for (const { index, result } of accepted) outcomes[index] = { kind: 'committed', result };
  } catch (error) {
    for (const { index } of accepted) outcomes[index] = { kind: 'failed', error };
  }
  return outcomes;
}
