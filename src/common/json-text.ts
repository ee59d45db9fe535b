import { isUtf8 } from 'node:buffer';

/** The deepest nesting of objects and arrays a JSON body may have. */
export const MAX_JSON_DEPTH = 32;
/** The most properties one object of a JSON body may have. */
export const MAX_JSON_PROPERTIES = 1_000;
/** The most items one array of a JSON body may have. */
export const MAX_JSON_ITEMS = 10_000;
/** The most members (object properties and array items, at any depth) a JSON body may have in all. */
export const MAX_JSON_MEMBERS = 20_000;

/** Keys that would reach an object's prototype machinery if anything merged the body naively. */
const RESERVED_KEYS = new Set(['__proto__', 'constructor']);

export type JsonTextProblem =
  | { kind: 'invalid_utf8' }
  | { kind: 'too_deep' }
  | { kind: 'too_many_properties' }
  | { kind: 'too_many_items' }
  | { kind: 'too_many_members' }
  | { kind: 'lone_surrogate' }
  | { kind: 'reserved_key'; key: string };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
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
 * bytes that are not UTF-8 (the parser would store U+FFFD in their place), nesting deeper than
 * MAX_JSON_DEPTH (the validation pipe recurses, and 100,000 levels overflowed its stack), more
 * members than MAX_JSON_PROPERTIES per object, MAX_JSON_ITEMS per array or MAX_JSON_MEMBERS in all
 * (what walks the parsed body later is not linear in an object's size: class-transformer's key
 * de-duplication is quadratic, and 60,000 properties held the event loop for seconds), a
 * `\uD800`-style escape that is not half of a surrogate pair (it cannot be stored or validated as
 * text), and a `__proto__` or `constructor` key. Linear in the body's length, no allocation for
 * ordinary bodies. Text that is not valid JSON is left to `JSON.parse` to refuse.
 */
export function inspectJsonText(text: Buffer): JsonTextProblem | undefined {
  if (!isUtf8(text)) return { kind: 'invalid_utf8' };
  let depth = 0;
  let pendingHighSurrogate = false;
  // Per open container (index = depth): whether it is an object, and the commas met directly in it.
  const isObject: boolean[] = [];
  const commas: number[] = [];
  let members = 0;
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > MAX_JSON_DEPTH) return { kind: 'too_deep' };
      isObject[depth] = byte === OPEN_BRACE;
      commas[depth] = 0;
      // A container that is not empty holds one member more than it has commas.
      if (!closesAfterWhitespace(text, i + 1) && ++members > MAX_JSON_MEMBERS) {
        return { kind: 'too_many_members' };
      }
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    } else if (byte === COMMA && depth > 0) {
      if (++members > MAX_JSON_MEMBERS) return { kind: 'too_many_members' };
      const count = ++commas[depth] + 1;
      if (isObject[depth] ? count > MAX_JSON_PROPERTIES : count > MAX_JSON_ITEMS) {
        return { kind: isObject[depth] ? 'too_many_properties' : 'too_many_items' };
      }
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

/** Whether the container opened just before `from` closes at once (`{}`, `[ ]`). */
function closesAfterWhitespace(text: Buffer, from: number): boolean {
  let at = from;
  while (at < text.length && isWhitespace(text[at])) at++;
  return text[at] === CLOSE_BRACE || text[at] === CLOSE_BRACKET;
}

function decodeKey(raw: string): string | undefined {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return undefined;
  }
}
