/**
 * The projection checkpoint route (see `docs/checkpoints.md`): `GET` reads the session's latest
 * checkpoint from its object, in slices of at most {@link HTTP_CHECKPOINT_SLICE_BYTES} (`?offset=`
 * for the next; a record may be larger than one Worker-to-object RPC value or a sane response),
 * `POST` replaces it, or (with `extendsBytes`) appends the new bytes of a record that extends the
 * stored one, so a client's regular write sends the IDs used since its last one rather than the
 * whole record, or (with `upload`) carries one slice of a whole record too large for one request. The bytes travel as unpadded base64url in JSON. The object also writes
 * checkpoints on its own.
 *
 * The object's side is the checkpoint rows of `SESSION_OPERATIONS` (`src/core/operations/`),
 * called through the one RPC client. The route stays hand-written: one `POST` serves three rows
 * (a whole record, possibly in slices; an extension; a slice), and the bytes cross HTTP as
 * base64url but RPC as a `Uint8Array`.
 */
import { z } from 'zod';
import { callOperation } from '../../adapters/durable-object/operation-client.js';
import {
  CHECKPOINT_SLICE_BYTES,
  MAX_CHECKPOINT_BYTES,
  writeWholeCheckpoint,
  type DurableCheckpointExtension,
  type DurableCheckpointRecord,
} from '../../core/checkpoint/contract.js';
import { encodeBase64Url, decodeBase64Url } from '../../protocol/base64url.js';
import { DurableEventStoreError } from '../../protocol/errors.js';
import { EventId, EventSequence } from '../../protocol/ids.js';
import { HTTP_PATHS } from '../../protocol/http-paths.js';
import { defineSessionRoute, type RouteDefinition } from '../route-kit.js';

/** Largest checkpoint accepted over HTTP (base64url of at most 48 MiB of bytes). */
const MAX_HTTP_CHECKPOINT_BYTES = Math.min(MAX_CHECKPOINT_BYTES, 48 * 1024 * 1024);

/** Most bytes of a record one slice of a sliced `POST` carries (one object RPC slice). */
const HTTP_CHECKPOINT_WRITE_SLICE_BYTES = CHECKPOINT_SLICE_BYTES;

/** Bytes of the record one `GET` answers (about 11 MB of base64url). */
export const HTTP_CHECKPOINT_SLICE_BYTES = 8 * 1024 * 1024;

/** A checkpoint on the wire. */
const wireCheckpointSchema = z
  .object({
    sequence: z.number().int().min(1),
    eventId: z.string().min(1).max(256),
    /** The bytes, unpadded base64url. */
    data: z.string().regex(/^[A-Za-z0-9_-]*$/),
  })
  .strict();

/** A slice of the stored checkpoint: the record's position and size, and its bytes from `offset`. */
const wireCheckpointSliceSchema = wireCheckpointSchema
  .extend({
    totalBytes: z.number().int().min(0).describe('size of the whole record; read on with ?offset= until it is reached'),
    offset: z.number().int().min(0).describe('where `data` starts in the record'),
  })
  .strict();

const readResponseSchema = z.object({ checkpoint: wireCheckpointSliceSchema.nullable() }).strict();

/** A write: a whole record, or (with `extendsBytes`) the tail of one that extends the stored record. */
const writeBodySchema = wireCheckpointSchema
  .extend({
    extendsBytes: z
      .number()
      .int()
      .min(8)
      .multipleOf(8)
      .optional()
      .describe(
        'the record extends the stored one of exactly this many bytes: `data` then holds its bytes from extendsBytes - 8 on (the 8 the stored record must end with, then the new ones)',
      ),
    upload: z
      .strictObject({
        id: z.string().min(1).max(128).describe('chosen by the client for one record'),
        totalBytes: z.number().int().min(1).describe('size of the whole record'),
        offset: z.number().int().min(0).describe('where `data` starts in the record'),
      })
      .optional()
      .describe(
        `one slice of a whole record too large for one request: slices of at most ${HTTP_CHECKPOINT_WRITE_SLICE_BYTES} bytes, in order from offset 0; the object writes the record when the last one is in`,
      ),
  })
  .strict();

const writeResponseSchema = z
  .strictObject({
    ok: z.literal(true),
    extended: z
      .boolean()
      .optional()
      .describe('for an extension: false when the stored record is not the prefix it builds on (nothing was written; send the record whole)'),
    complete: z.boolean().optional().describe('for a slice: true once it was the last one and the record is written'),
  })
  .meta({ id: 'CheckpointWriteResponse' });

const readQuerySchema = z
  .object({ offset: z.string().regex(/^\d{1,12}$/).optional().describe('first byte of the slice (default 0)') })
  .strict();

/** The checkpoint routes. */
export function checkpointRoutes(): RouteDefinition[] {
  return [
    defineSessionRoute({
      method: 'get',
      path: HTTP_PATHS.checkpoint,
      operationId: 'readCheckpoint',
      summary: "A slice of the session's latest projection checkpoint (derived data)",
      tags: ['checkpoints'],
      scope: 'read',
      query: readQuerySchema,
      response: { schema: readResponseSchema, description: 'A slice of the checkpoint, or null.' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_UNAVAILABLE'],
      async handle({ sessionId, object, query }) {
        const offset = query.offset === undefined ? 0 : Number(query.offset);
        const slice = await callOperation(object, sessionId, 'readCheckpoint', { offset, length: HTTP_CHECKPOINT_SLICE_BYTES });
        if (slice === null) return { checkpoint: null };
        return {
          checkpoint: {
            sequence: slice.sequence,
            eventId: slice.eventId,
            data: encodeBase64Url(new Uint8Array(slice.data)),
            totalBytes: slice.totalBytes,
            offset: slice.offset,
          },
        };
      },
    }),
    defineSessionRoute({
      method: 'post',
      path: HTTP_PATHS.checkpoint,
      operationId: 'writeCheckpoint',
      summary: "Replace the session's projection checkpoint, or extend it",
      tags: ['checkpoints'],
      scope: 'append',
      body: writeBodySchema,
      maxBodyBytes: Math.ceil((MAX_HTTP_CHECKPOINT_BYTES * 4) / 3) + 1024,
      response: { schema: writeResponseSchema, description: 'Stored (for an extension `extended`, for a slice `complete` says whether).' },
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_LIMIT_EXCEEDED', 'DURABLE_EVENT_UNAVAILABLE'],
      async handle({ sessionId, object, body }) {
        const data = decodeBase64Url(body.data);
        if (data === undefined) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'checkpoint data is not base64url');
        const position = { sequence: EventSequence(body.sequence), eventId: EventId(body.eventId) };
        if (body.upload !== undefined) {
          if (body.extendsBytes !== undefined) throw new DurableEventStoreError('DURABLE_EVENT_INVALID_INPUT', 'a slice of a whole record cannot extend one');
          const { id: uploadId, totalBytes, offset } = body.upload;
          const slice = { uploadId, ...position, totalBytes, offset, data };
          const complete = await callOperation(object, sessionId, 'writeCheckpointSlice', slice);
          return { ok: true as const, complete };
        }
        if (body.extendsBytes !== undefined) {
          const extension: DurableCheckpointExtension = { ...position, extendsBytes: body.extendsBytes, tail: data };
          const extended = await callOperation(object, sessionId, 'extendCheckpoint', extension);
          return { ok: true as const, extended };
        }
        const record: DurableCheckpointRecord = { ...position, data };
        // A record over one RPC value's room goes to the object in slices.
        await writeWholeCheckpoint(
          record,
          (whole) => callOperation(object, sessionId, 'writeCheckpoint', whole),
          (slice) => callOperation(object, sessionId, 'writeCheckpointSlice', slice),
        );
        return { ok: true as const };
      },
    }),
  ];
}
