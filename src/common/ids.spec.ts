import fc from 'fast-check';
import { encodeBase62, ID_PREFIXES, IdKind, isIdOf, newId } from './ids';

describe('ids', () => {
  it.each(Object.keys(ID_PREFIXES) as IdKind[])(
    'newId(%s) carries its prefix and a 22-char base62 suffix',
    (kind) => {
      const id = newId(kind);
      expect(id).toMatch(new RegExp(`^${ID_PREFIXES[kind]}_[0-9A-Za-z]{22}$`));
      expect(isIdOf(kind, id)).toBe(true);
    },
  );

  it('draws fresh bytes for every id, across refills of the random pool', () => {
    // 4096-byte pool, 16 bytes an id: 1000 ids cross three refills.
    const ids = Array.from({ length: 1000 }, () => newId('task'));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('does not accept an id of another kind', () => {
    expect(isIdOf('team', newId('user'))).toBe(false);
    expect(isIdOf('user', 'usr_../../etc')).toBe(false);
  });

  it('base62 encoding is injective and fixed-width for a byte length', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        fc.uint8Array({ minLength: 16, maxLength: 16 }),
        (a, b) => {
          const ea = encodeBase62(a);
          expect(ea).toHaveLength(22);
          expect(ea === encodeBase62(b)).toBe(Buffer.from(a).equals(Buffer.from(b)));
        },
      ),
    );
  });
});
