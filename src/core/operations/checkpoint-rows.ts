/** The checkpoint rows of the session operation table (host `checkpoint`, RPC only). */
import { z } from 'zod';
import { isValidId, type EventId, type EventSequence } from '../../protocol/ids.js';
import type { OperationSpec } from './spec.js';

/**
 * Bytes over RPC (structured clone keeps a `Uint8Array`). The checkpoint rows have no HTTP route of
 * their own: the Worker's checkpoint route carries the bytes as base64url and one `POST` serves
 * three rows (`src/app/routes/checkpoints.ts`).
 */
const bytesSchema = z.custom<Uint8Array>((value) => value instanceof Uint8Array, { error: 'must be a Uint8Array' });
/** A checkpoint's position: the last event it covers (the store checks both against its log). */
const checkpointPosition = {
  sequence: z.custom<EventSequence>((value) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 1),
  eventId: z.custom<EventId>((value) => isValidId(value)),
};

const checkpointSliceSchema = z.strictObject({
  ...checkpointPosition,
  totalBytes: z.number().int().min(0),
  offset: z.number().int().min(0),
  data: bytesSchema,
});
const checkpointRecordSchema = z.strictObject({ ...checkpointPosition, data: bytesSchema, extendsBytes: z.number().int().optional() });
const checkpointWriteSliceSchema = z.strictObject({
  uploadId: z.string().min(1).max(128),
  sequence: z.number(),
  eventId: z.string(),
  totalBytes: z.number().int().min(1),
  offset: z.number().int().min(0),
  data: bytesSchema,
});
const checkpointExtensionSchema = z.strictObject({ ...checkpointPosition, extendsBytes: z.number().int(), tail: bytesSchema });

/** The checkpoint rows. */
export const CHECKPOINT_ROWS = {
  readCheckpoint: {
    // The slice at `offset` (default 0) of the stored checkpoint, at most `length` bytes (default
    // and maximum CHECKPOINT_SLICE_BYTES), or null: a record may exceed one RPC value (32 MiB).
    kind: 'read',
    host: 'checkpoint',
    input: z.strictObject({ offset: z.number().int().min(0).optional(), length: z.number().int().min(1).optional() }),
    output: checkpointSliceSchema.nullable(),
    rpcArgs: (offset?: number, length?: number) => ({ offset, length }),
  },
  writeCheckpoint: {
    // Replaces the stored checkpoint with a record that crosses in one RPC value.
    kind: 'replace',
    host: 'checkpoint',
    input: checkpointRecordSchema,
    output: z.null(),
    rpcArgs: (record: z.output<typeof checkpointRecordSchema>) => record,
  },
  writeCheckpointSlice: {
    // One slice of a whole record larger than one RPC value, in order from offset 0
    // (`src/edge/checkpoint-uploads.ts`): true once the last one is in and the record is written.
    kind: 'replace',
    host: 'checkpoint',
    input: checkpointWriteSliceSchema,
    output: z.boolean(),
    rpcArgs: (slice: z.output<typeof checkpointWriteSliceSchema>) => slice,
  },
  extendCheckpoint: {
    // Appends the tail of a record that extends the stored one when the stored record is exactly
    // the prefix it builds on: true; otherwise nothing is written, false (send the record whole).
    kind: 'replace',
    host: 'checkpoint',
    input: checkpointExtensionSchema,
    output: z.boolean(),
    rpcArgs: (extension: z.output<typeof checkpointExtensionSchema>) => extension,
  },
} as const satisfies Record<string, OperationSpec>;
