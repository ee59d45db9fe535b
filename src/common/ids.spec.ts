import fc from 'fast-check';
import { defineIdKind, encodeBase62, isIdOf, newId } from './ids';

describe('ids', () => {
  const widget = defineIdKind('wdg');
  const gadget = defineIdKind('gdg');

  it("newId carries its kind's prefix and a 22-char base62 suffix", () => {
    const id = newId(widget);
    expect(id).toMatch(/^wdg_[0-9A-Za-z]{22}$/);
    expect(isIdOf(widget, id)).toBe(true);
  });

  it('takes each prefix once, so two modules cannot issue look-alike ids', () => {
    expect(() => defineIdKind('wdg')).toThrow('declared twice');
    expect(() => defineIdKind('Bad-prefix')).toThrow('lowercase letters');
  });

  it('draws fresh bytes for every id, across refills of the random pool', () => {
    // 4096-byte pool, 16 bytes an id: 1000 ids cross three refills.
    const ids = Array.from({ length: 1000 }, () => newId(widget));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('does not accept an id of another kind', () => {
    expect(isIdOf(gadget, newId(widget))).toBe(false);
    expect(isIdOf(widget, 'wdg_../../etc')).toBe(false);
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
