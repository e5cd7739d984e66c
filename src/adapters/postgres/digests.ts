/**
 * The stored per-event digests (see `DurableEventDigestStore`): written with each event row by
 * `append`, read back by `verify`; `null` for rows written before migration 5.
 */
import { throwIfAborted } from '../../core/abort.js';
import type { DurableEventDigestReadOptions, DurableEventDigestRow } from '../../core/checkpoint/event-digest.js';
import { checkSessionId } from '../../core/log-engine.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import type { SessionId } from '../../protocol/ids.js';
import type { PostgresConnection } from './connection.js';
import { integer } from './failures.js';
import type { PostgresStatements } from './statements.js';

/** The digests of events `after + 1 ..`, at most `limit` rows. */
export async function readEventDigests(
  connection: PostgresConnection,
  sql: PostgresStatements,
  sessionId: SessionId,
  options: DurableEventDigestReadOptions,
): Promise<DurableEventDigestRow[]> {
  const id = checkSessionId(sessionId);
  const after = options.after ?? 0;
  if (!Number.isSafeInteger(after) || after < 0 || !Number.isSafeInteger(options.limit) || options.limit < 1) {
    throw new DurableEventStoreError('DURABLE_EVENT_INVALID_OPTIONS', 'after must be an integer >= 0 and limit an integer >= 1');
  }
  throwIfAborted(options.signal);
  const rows = await connection.read<{ sequence: string; digest: string | null }>('digest read', sql.readDigests, [id, after, Math.min(options.limit, 2 ** 31 - 1)], options.signal);
  return rows.map((row) => ({ sequence: integer(row.sequence, 'sequence'), digest: row.digest === null ? null : Number(row.digest) }));
}
