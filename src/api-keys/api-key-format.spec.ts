import fc from 'fast-check';
import { BASE62_ALPHABET } from '../common/ids';
import { ApiKeyFormat, ApiKeyHasher, keyStart } from './api-key-format';

describe('ApiKeyFormat', () => {
  const format = new ApiKeyFormat('sk');

  it('generates sk_ + 43 base62 characters + a 6-character checksum', () => {
    const key = format.generate();
    expect(key).toMatch(/^sk_[0-9A-Za-z]{49}$/);
    expect(keyStart(key)).toBe(key.slice(0, 10));
  });

  it('every generated key validates', () => {
    fc.assert(
      fc.property(fc.integer(), () => {
        expect(format.isWellFormed(format.generate())).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('any single-character change after the prefix fails the check', () => {
    const key = format.generate();
    fc.assert(
      fc.property(
        fc.integer({ min: 3, max: key.length - 1 }),
        fc.constantFrom(...BASE62_ALPHABET),
        (index, char) => {
          fc.pre(key[index] !== char);
          const changed = key.slice(0, index) + char + key.slice(index + 1);
          expect(format.isWellFormed(changed)).toBe(false);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('refuses other prefixes, lengths and characters', () => {
    const key = format.generate();
    expect(format.isWellFormed(key.replace(/^sk_/, 'pk_'))).toBe(false);
    expect(format.isWellFormed(key + 'a')).toBe(false);
    expect(format.isWellFormed(key.slice(0, -1))).toBe(false);
    expect(format.isWellFormed(key.slice(0, 20) + '-' + key.slice(21))).toBe(false);
    expect(new ApiKeyFormat('gh').isWellFormed(key)).toBe(false);
  });

  it('computes HMAC-SHA256 under the secret (RFC 4231 test case 2)', () => {
    expect(new ApiKeyHasher('Jefe').hash('what do ya want for nothing?')).toBe(
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
  });

  it('hashes deterministically under one secret and differently under another', () => {
    const key = format.generate();
    expect(new ApiKeyHasher('a'.repeat(32)).hash(key)).toBe(new ApiKeyHasher('a'.repeat(32)).hash(key));
    expect(new ApiKeyHasher('a'.repeat(32)).hash(key)).not.toBe(new ApiKeyHasher('b'.repeat(32)).hash(key));
    expect(new ApiKeyHasher('a'.repeat(32)).hash(key)).toMatch(/^[0-9a-f]{64}$/);
  });
});
