import { clipText } from './problem.filter';

const jsonBytes = (text: string): number => Buffer.byteLength(JSON.stringify(text)) - 2;

describe('clipText', () => {
  it('leaves a text that fits as it is, up to the last byte', () => {
    expect(clipText('a'.repeat(100), 100)).toBe('a'.repeat(100));
    expect(clipText('é'.repeat(50), 100)).toBe('é'.repeat(50));
    expect(clipText('', 10)).toBe('');
  });

  it.each([
    ['ASCII', 'n'.repeat(100_000)],
    ['two-byte characters', 'é'.repeat(1_000)],
    ['emoji', '😀'.repeat(1_000)],
    ['control characters (escaped as \\u00XX)', '\u0001'.repeat(1_000)],
    ['quotes and backslashes', '"\\'.repeat(1_000)],
    ['lone surrogates', '\ud800'.repeat(1_000)],
  ])('cuts %s to fit the bytes of its JSON text, with an ellipsis', (_case, text) => {
    const clipped = clipText(text, 100);
    expect(clipped.endsWith('…')).toBe(true);
    expect(jsonBytes(clipped)).toBeLessThanOrEqual(100);
    expect(jsonBytes(clipped)).toBeGreaterThan(90);
    expect(text.startsWith(clipped.slice(0, -1))).toBe(true);
  });

  it('never splits a surrogate pair', () => {
    // 4 bytes each: 24 emoji fill 96 bytes, and the ellipsis (3) would not fit after a 25th.
    expect(clipText('😀'.repeat(1_000), 100)).toBe(`${'😀'.repeat(24)}…`);
  });
});
