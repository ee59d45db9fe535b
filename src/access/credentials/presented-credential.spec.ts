import type { Request } from 'express';
import { AccessDenial } from '../access-denial';
import { extractCredential } from './presented-credential';

// The URL carries a query string exactly when `query` has entries, as Express's request would.
const req = (headers: Record<string, string | string[]>, query: Record<string, unknown> = {}): Request =>
  ({
    headers,
    query,
    url: Object.keys(query).length ? '/v1/auth/verify?api_key=x' : '/v1/auth/verify',
  }) as unknown as Request;

const codeOf = (fn: () => unknown): string | undefined => {
  const outcome = fn();
  return outcome instanceof AccessDenial ? outcome.code : undefined;
};

describe('extractCredential', () => {
  it('reads Bearer, X-API-Key and ?api_key', () => {
    expect(extractCredential(req({ authorization: 'Bearer abc' }), true)).toEqual({
      value: 'abc',
      via: 'bearer',
    });
    expect(extractCredential(req({ 'x-api-key': 'abc' }), true)).toEqual({ value: 'abc', via: 'x-api-key' });
    expect(extractCredential(req({}, { api_key: 'abc' }), true)).toEqual({ value: 'abc', via: 'query' });
  });

  it('ignores ?api_key when switched off', () => {
    expect(extractCredential(req({}, { api_key: 'abc' }), false)).toBeUndefined();
  });

  it('accepts the same credential sent twice, refuses two different ones', () => {
    expect(extractCredential(req({ authorization: 'Bearer abc', 'x-api-key': 'abc' }), true)).toEqual({
      value: 'abc',
      via: 'bearer',
    });
    expect(
      codeOf(() => extractCredential(req({ authorization: 'Bearer abc', 'x-api-key': 'xyz' }), true)),
    ).toBe('ambiguous_credentials');
  });

  it('refuses malformed headers', () => {
    expect(codeOf(() => extractCredential(req({ authorization: 'Basic Zm9vOmJhcg==' }), true))).toBe(
      'malformed_credentials',
    );
    expect(codeOf(() => extractCredential(req({}, { api_key: ['a', 'b'] }), true))).toBe(
      'malformed_credentials',
    );
  });
});
