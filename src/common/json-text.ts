/** The deepest nesting of objects and arrays a JSON body may have. */
export const MAX_JSON_DEPTH = 32;

/** Keys that would reach an object's prototype machinery if anything merged the body naively. */
const RESERVED_KEYS = new Set(['__proto__', 'constructor']);

export type JsonTextProblem =
  { kind: 'too_deep' } | { kind: 'lone_surrogate' } | { kind: 'reserved_key'; key: string };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const LOWER_U = 0x75;

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function hexValue(text: Buffer, at: number): number {
  const value = Number.parseInt(text.toString('latin1', at, at + 4), 16);
  return Number.isNaN(value) ? -1 : value;
}

/**
 * One pass over the raw JSON text, before `JSON.parse` and before anything walks the result: refuses
 * nesting deeper than MAX_JSON_DEPTH (the validation pipe recurses, and 100,000 levels overflowed its
 * stack), a `\uD800`-style escape that is not half of a surrogate pair (it cannot be stored or
 * validated as text), and a `__proto__` or `constructor` key. Linear in the body's length, no
 * allocation for ordinary bodies. Text that is not valid JSON is left to `JSON.parse` to refuse.
 */
export function inspectJsonText(text: Buffer): JsonTextProblem | undefined {
  let depth = 0;
  let pendingHighSurrogate = false;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > MAX_JSON_DEPTH) return { kind: 'too_deep' };
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    } else if (byte === QUOTE) {
      const start = i + 1;
      let escaped = false;
      for (i = start; i < text.length && text[i] !== QUOTE; i++) {
        if (text[i] !== BACKSLASH) {
          if (pendingHighSurrogate) return { kind: 'lone_surrogate' };
          continue;
        }
        escaped = true;
        i++;
        if (text[i] !== LOWER_U) {
          if (pendingHighSurrogate) return { kind: 'lone_surrogate' };
          continue;
        }
        const unit = hexValue(text, i + 1);
        i += 4;
        const isHigh = unit >= 0xd800 && unit <= 0xdbff;
        const isLow = unit >= 0xdc00 && unit <= 0xdfff;
        if (pendingHighSurrogate !== isLow) return { kind: 'lone_surrogate' };
        pendingHighSurrogate = isHigh;
      }
      if (pendingHighSurrogate) return { kind: 'lone_surrogate' };
      const end = i;
      let next = i + 1;
      while (next < text.length && isWhitespace(text[next])) next++;
      if (text[next] === COLON && end - start <= 64) {
        // A key: compare it as JSON.parse will read it (escapes included), only when it could match.
        const raw = text.toString('utf8', start, end);
        const key = escaped ? decodeKey(raw) : raw;
        if (key !== undefined && RESERVED_KEYS.has(key)) return { kind: 'reserved_key', key };
      }
    }
  }
  return undefined;
}

function decodeKey(raw: string): string | undefined {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return undefined;
  }
}
