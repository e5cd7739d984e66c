import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DurableCheckpointInconclusiveError, HashedKeyFilter } from '../../src/core/projector/key-filter.js';
import { ID_KIND, ID_SPACE } from '../../src/core/projector/fold-state.js';
import { KEY_PREFIXES, PersistentKeySet, type KeyKind } from '../../src/core/projector/persistent-key-set.js';

// The set stores `prefix + id` keys as bare IDs per kind; these tests hold it to the behaviour of
// a plain string set of the spelled keys, whichever API (spelled or kind + ID) is used.

const kindArb = fc.integer({ min: 0, max: KEY_PREFIXES.length - 1 }) as fc.Arbitrary<KeyKind>;
// Short IDs over a small alphabet (with ':' and prefix letters) so that spellings collide often.
const idArb = fc.string({ unit: fc.constantFrom('e', 'r', 'c', ':', 'x', ''), maxLength: 4 });
const spelledArb = fc.oneof(
  fc.tuple(kindArb, idArb).map(([kind, id]) => KEY_PREFIXES[kind] + id),
  idArb,
  fc.constantFrom('', 'e', ':', 'e:', 'c:', 'z:', 'E:x', ':e:'),
);
type Op =
  | { op: 'add' | 'has'; key: string; spelled: boolean }
  | { op: 'fork' | 'switch'; to: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constantFrom('add' as const, 'has' as const), key: spelledArb, spelled: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom('fork' as const, 'switch' as const), to: fc.nat() }) },
);

function split(key: string): { kind: KeyKind; id: string } | null {
  const kind = KEY_PREFIXES.indexOf(key.slice(0, 2) as (typeof KEY_PREFIXES)[number]);
  return key.length >= 2 && kind >= 0 ? { kind: kind as KeyKind, id: key.slice(2) } : null;
}

describe('PersistentKeySet keys by kind', () => {
  it('ID_SPACE spells each ID_KIND with its prefix', () => {
    for (const space of Object.keys(ID_KIND) as (keyof typeof ID_KIND)[]) {
      expect(ID_SPACE[space]).toBe(KEY_PREFIXES[ID_KIND[space]]);
    }
    expect(new Set(Object.values(ID_KIND)).size).toBe(KEY_PREFIXES.length);
  });

  it('behaves as a plain set of the spelled keys, through forks of forks', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 200 }), (ops) => {
        // Each copy with its model. Forks view their original's keys in place (by ordinal), so
        // every copy stays valid however the others grow.
        const copies: { set: PersistentKeySet; model: Set<string> }[] = [{ set: PersistentKeySet.empty(), model: new Set() }];
        copies[0]!.set.trackAdds();
        const tracked: string[] = [];
        let current = 0;
        for (const step of ops) {
          const copy = copies[current]!;
          if (step.op === 'add' || step.op === 'has') {
            const parts = split(step.key);
            const viaKind = !step.spelled && parts !== null;
            const expected = step.op === 'add' ? !copy.model.has(step.key) : copy.model.has(step.key);
            const actual =
              step.op === 'add'
                ? viaKind ? copy.set.addKey(parts.kind, parts.id) : copy.set.add(step.key)
                : viaKind ? copy.set.hasKey(parts.kind, parts.id) : copy.set.has(step.key);
            expect(actual).toBe(expected);
            if (step.op === 'add') {
              copy.model.add(step.key);
              if (current === 0 && expected) tracked.push(step.key);
            }
          } else if (step.op === 'switch') {
            current = step.to % copies.length;
          } else {
            const set = copy.set.fork();
            copies.push({ set, model: new Set(copy.model) });
            current = copies.length - 1;
          }
        }
        for (const { set, model } of copies) {
          expect(set.size).toBe(model.size);
          expect([...set.exactKeys()].sort()).toEqual([...model].sort());
          for (const key of model) expect(set.has(key)).toBe(true);
        }
        expect(copies[0]!.set.drainAdds()).toEqual(tracked);
      }),
      { numRuns: 1000 },
    );
  });

  it('throws inconclusive for a key of the checkpoint filter, spelled with its prefix', () => {
    const set = PersistentKeySet.restored(HashedKeyFilter.EMPTY.withKeys(['c:old', 'plain']));
    expect(() => set.hasKey(ID_KIND.command, 'old')).toThrow(DurableCheckpointInconclusiveError);
    expect(() => set.addKey(ID_KIND.command, 'old')).toThrow(DurableCheckpointInconclusiveError);
    expect(() => set.has('plain')).toThrow(DurableCheckpointInconclusiveError);
    expect(set.hasKey(ID_KIND.event, 'fresh')).toBe(false);
    expect(set.addKey(ID_KIND.event, 'fresh')).toBe(true);
    expect(set.has('e:fresh')).toBe(true);
    expect(set.size).toBe(3);
  });
});
