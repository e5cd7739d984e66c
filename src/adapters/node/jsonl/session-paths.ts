/**
 * Where a session's files live.
 *
 * `{root}/durable-events/{name}.jsonl`, `{name}.jsonl.lock`, `{name}.lease.json` and
 * `{name}.ledger.jsonl`, `{name}.checkpoint` and `{name}.jsonl.validated`, where
 * `name` is the unpadded base64url encoding of the session ID's UTF-8 bytes, so no session ID can
 * name a path (no `/`, `..`, or reserved characters reach the filesystem). Session IDs may be
 * 256 characters long, which would overflow the usual 255-byte file-name limit once encoded; an
 * encoding longer than {@link MAX_ENCODED_NAME_LENGTH} is replaced by `~` plus the base64url
 * SHA-256 of the ID. `~` is outside the base64url alphabet, so a hashed name never equals a
 * plain one, and every line read back is still checked against the session ID.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { encodeBase64Url } from '../../../protocol/base64url.js';
import type { SessionId } from '../../../protocol/ids.js';

/** Name of the directory under the storage root that holds every session's files. */
export const EVENTS_DIRECTORY = 'durable-events';
/** Longest plain base64url file stem; longer ones are hashed (leaves room for suffixes). */
const MAX_ENCODED_NAME_LENGTH = 160;

/** The files of one session. */
export interface SessionPaths {
  /** Directory holding every session's files. */
  directory: string;
  /** The event log: one JSON array (one append batch) per line. */
  log: string;
  /** The lock sidecar; the lock belongs to an open descriptor, not to the file's existence. */
  lock: string;
  /** Execution lease state, replaced atomically. */
  lease: string;
  /** The durability records: one record per line. */
  durability: string;
  /** The latest projection checkpoint (derived data), replaced atomically. */
  checkpoint: string;
  /** What a store last validated of the log (derived data, see `validated-state.ts`), replaced atomically. */
  validated: string;
}

/** The file stem of a session: base64url of its UTF-8 bytes, or `~` + hash for long IDs. */
export function sessionFileStem(sessionId: SessionId): string {
  const bytes = new TextEncoder().encode(sessionId);
  const plain = encodeBase64Url(bytes);
  if (plain.length <= MAX_ENCODED_NAME_LENGTH) return plain;
  return `~${encodeBase64Url(createHash('sha256').update(bytes).digest())}`;
}

/** Suffix of a session's event log after its stem. */
const LOG_SUFFIX = '.jsonl';

/** Suffix of a session's durability file after its stem (storage name, kept for existing files). */
const DURABILITY_FILE_SUFFIX = '.ledger.jsonl';

/**
 * The stem of `name` when it names a session's event log by this naming rule (base64url
 * characters, or `~` and a hash, then `.jsonl`), else `undefined`. No other file of a session
 * (`.ledger.jsonl`, `.jsonl.lock`, ...) has such a name.
 */
export function logFileStem(name: string): string | undefined {
  if (!name.endsWith(LOG_SUFFIX)) return undefined;
  const stem = name.slice(0, -LOG_SUFFIX.length);
  return /^~?[A-Za-z0-9_-]+$/.test(stem) ? stem : undefined;
}

/** Paths of the files of `sessionId` under the absolute `root`. */
export function sessionPaths(root: string, sessionId: SessionId): SessionPaths {
  const directory = path.join(root, EVENTS_DIRECTORY);
  const stem = path.join(directory, sessionFileStem(sessionId));
  return {
    directory,
    log: `${stem}${LOG_SUFFIX}`,
    lock: `${stem}.jsonl.lock`,
    lease: `${stem}.lease.json`,
    durability: `${stem}${DURABILITY_FILE_SUFFIX}`,
    checkpoint: `${stem}.checkpoint`,
    validated: `${stem}.jsonl.validated`,
  };
}
