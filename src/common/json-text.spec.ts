import { inspectJsonText, MAX_JSON_DEPTH } from './json-text';

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
});
