import { describe, expect, it } from 'vitest';
import {
  CommandId,
  DurableEventStoreError,
  EventId,
  EventSequence,
  FencingToken,
  InputId,
  MAX_ID_LENGTH,
  ModelAttemptId,
  PermissionRequestId,
  RequestId,
  SessionId,
  ToolAttemptId,
  TurnId,
  WorkerId,
  describeInvalidId,
  isValidId,
} from '../../src/protocol/index.js';

const constructors = { SessionId, RequestId, TurnId, CommandId, InputId, ModelAttemptId, ToolAttemptId, PermissionRequestId, EventId, WorkerId };

function invalidInput(run: () => unknown): DurableEventStoreError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(DurableEventStoreError);
    expect((error as DurableEventStoreError).code).toBe('DURABLE_EVENT_INVALID_INPUT');
    return error as DurableEventStoreError;
  }
  throw new Error('expected a throw');
}

describe.each(Object.entries(constructors))('%s', (name, make) => {
  it('accepts ordinary ids, including the longest and non-ASCII ones', () => {
    expect(make('abc-123')).toBe('abc-123');
    expect(make('x'.repeat(MAX_ID_LENGTH))).toHaveLength(MAX_ID_LENGTH);
    expect(make('сессия/😀 with spaces')).toBe('сессия/😀 with spaces');
  });

  it('refuses empty, too long and control characters, naming the kind', () => {
    for (const bad of ['', 'x'.repeat(MAX_ID_LENGTH + 1), 'a\u0000', 'line\nbreak', 'tab\t', 'del\u007f', 'c1\u0085']) {
      expect(invalidInput(() => make(bad)).message).toContain(name);
    }
    expect(invalidInput(() => make(42 as unknown as string)).message).toContain('string');
  });

  it('refuses strings that are not well-formed UTF-16 (lone surrogates) and keeps surrogate pairs', () => {
    for (const bad of ['tenant-\uD800', '\uDC00', 'a\uDBFFb', 'x\uDE00\uD83D', '\uD83D\uDE00\uDE00']) {
      expect(invalidInput(() => make(bad)).message).toContain('well-formed');
    }
    expect(make('tenant-\uD83D\uDE00')).toBe('tenant-\uD83D\uDE00');
    expect(make('tenant-\uFFFD')).toBe('tenant-\uFFFD');
  });
});

describe('describeInvalidId', () => {
  it('explains each problem', () => {
    expect(describeInvalidId('ok')).toBeUndefined();
    expect(describeInvalidId('')).toBe('must not be empty');
    expect(describeInvalidId('x'.repeat(257))).toContain('at most');
    expect(describeInvalidId('\u001b')).toContain('control');
    expect(describeInvalidId(null)).toContain('string');
    expect(isValidId('ok')).toBe(true);
    expect(isValidId('')).toBe(false);
  });
});

describe.each([
  ['EventSequence', EventSequence],
  ['FencingToken', FencingToken],
] as const)('%s', (name, make) => {
  it('accepts safe integers >= 1', () => {
    expect(make(1)).toBe(1);
    expect(make(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
  });
  it('refuses everything else', () => {
    for (const bad of [0, -1, 1.5, NaN, Infinity, Number.MAX_SAFE_INTEGER + 1, -0]) {
      expect(invalidInput(() => make(bad)).message).toContain(name);
    }
  });
});
