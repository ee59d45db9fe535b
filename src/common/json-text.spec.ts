import {
  inspectJsonText,
  MAX_JSON_DEPTH,
  MAX_JSON_ITEMS,
  MAX_JSON_MEMBERS,
  MAX_JSON_PROPERTIES,
} from './json-text';

const inspect = (text: string) => inspectJsonText(Buffer.from(text, 'utf8'));

describe('inspectJsonText', () => {
  it('passes ordinary bodies, including brackets and quotes inside strings', () => {
    expect(inspect('{"name":"a [b] {c}","tags":["x\\"y",1,null],"nested":{"k":{"v":true}}}')).toBeUndefined();
    expect(inspect('{"emoji":"\\ud83d\\ude00","text":"😀"}')).toBeUndefined();
    expect(inspect('{"description":"__proto__","constructor_name":"x"}')).toBeUndefined();
  });

  it(`allows ${MAX_JSON_DEPTH} levels and refuses one more`, () => {
    const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
    expect(inspect(nested(MAX_JSON_DEPTH))).toBeUndefined();
    expect(inspect(nested(MAX_JSON_DEPTH + 1))).toEqual({ kind: 'too_deep' });
    expect(inspect(`{"a":${'{"b":'.repeat(100_000)}`)).toEqual({ kind: 'too_deep' });
  });

  it.each([
    ['a high surrogate followed by text', '{"email":"\\ud800x@example.com"}'],
    ['a high surrogate at the end of a string', '{"name":"\\ud800"}'],
    ['a low surrogate alone', '{"name":"\\udc00"}'],
    ['a high surrogate followed by another escape', '{"name":"\\ud800\\n"}'],
    ['two high surrogates', '{"name":"\\ud800\\ud800"}'],
  ])('refuses %s', (_case, text) => {
    expect(inspect(text)).toEqual({ kind: 'lone_surrogate' });
  });

  it.each([
    ['{"__proto__":{"admin":true}}', '__proto__'],
    ['{"a":{"constructor":{"prototype":{}}}}', 'constructor'],
    ['{"\\u005f_proto__":1}', '__proto__'],
    ['[{"x":1},{ "constructor" :2}]', 'constructor'],
  ])('refuses the key in %s', (text, key) => {
    expect(inspect(text)).toEqual({ kind: 'reserved_key', key });
  });

  describe('members', () => {
    const object = (count: number, prefix = 'k') =>
      `{${Array.from({ length: count }, (_, i) => `"${prefix}${i}": [1]`).join(' , ')}}`;
    const array = (count: number) => `[${Array(count).fill(' "a,b" ').join(',')}]`;

    it(`allows ${MAX_JSON_PROPERTIES} properties in an object and refuses one more, at any depth`, () => {
      expect(inspect(object(MAX_JSON_PROPERTIES))).toBeUndefined();
      expect(inspect(object(MAX_JSON_PROPERTIES + 1))).toEqual({ kind: 'too_many_properties' });
      expect(inspect(`[{"a":${object(MAX_JSON_PROPERTIES + 1)}}]`)).toEqual({ kind: 'too_many_properties' });
    });

    it(`allows ${MAX_JSON_ITEMS} items in an array and refuses one more; commas in strings are text`, () => {
      expect(inspect(`{"a":${array(MAX_JSON_ITEMS)}}`)).toBeUndefined();
      expect(inspect(`{"a":${array(MAX_JSON_ITEMS + 1)}}`)).toEqual({ kind: 'too_many_items' });
    });

    it(`allows ${MAX_JSON_MEMBERS} members in all and refuses one more`, () => {
      const properties = (first: string) =>
        [first, ...Array.from({ length: 19 }, (_, i) => `"a${i}":${array(999)}`)].join(',');
      // 20 properties, each an array of 999 items: 20 + 20 × 999 = 20,000 members.
      expect(inspect(`{${properties(`"b":${array(999)}`)}}`)).toBeUndefined();
      expect(inspect(`{${properties(`"b":${array(999)}`)},"one more":1}`)).toEqual({
        kind: 'too_many_members',
      });
      // Empty objects and arrays are items, but hold no member themselves.
      const empties = `[${Array.from({ length: 999 }, (_, i) => (i % 2 ? '{ }' : '[\n]')).join(',')}]`;
      expect(inspect(`{${properties(`"b":${empties}`)}}`)).toBeUndefined();
    });
  });

  it.each([
    ['a lone continuation byte', [0x80]],
    ['a truncated sequence', [0xc3, 0x28]],
    ['an overlong encoding', [0xc0, 0xaf]],
    ['a surrogate encoded as UTF-8', [0xed, 0xa0, 0x80]],
    ['0xFF', [0xff]],
  ])('refuses bytes that are not UTF-8: %s', (_case, bytes) => {
    const text = Buffer.concat([Buffer.from('{"name":"'), Buffer.from(bytes), Buffer.from('"}')]);
    expect(inspectJsonText(text)).toEqual({ kind: 'invalid_utf8' });
  });
});
