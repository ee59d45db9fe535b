/**
 * `allowed_referrers` entries: an exact URL, or a prefix when the pattern ends in `/*`. One parser
 * serves both the request DTO (what is accepted) and the key check (what is matched).
 */
export type ReferrerRule = { exact: string } | { prefix: string };

function normalize(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
    if (parsed.username || parsed.password) return undefined;
    parsed.hash = '';
    return parsed.href;
  } catch {
    return undefined;
  }
}

/** An absolute http(s) URL without credentials, optionally ending in `/*`; undefined otherwise. */
export function parseReferrerRule(pattern: string): ReferrerRule | undefined {
  const wildcard = pattern.endsWith('/*');
  const base = wildcard ? pattern.slice(0, -1) : pattern;
  if (base.includes('*')) return undefined;
  const url = normalize(base);
  if (!url) return undefined;
  return wildcard ? { prefix: url } : { exact: url };
}

export const isReferrerRule = (pattern: string): boolean => parseReferrerRule(pattern) !== undefined;

export function compileReferrerRules(patterns: readonly string[]): ReferrerRule[] {
  return patterns.map(parseReferrerRule).filter((rule): rule is ReferrerRule => rule !== undefined);
}

/**
 * Compares normalized URLs: `https://app.example.com/*` allows `https://app.example.com/x` and the
 * bare origin `https://app.example.com`, never `https://app.example.com.evil.net/`, because the
 * prefix keeps the slash that ends the host.
 */
export function referrerAllowed(rules: readonly ReferrerRule[], referrer: string | undefined): boolean {
  if (!referrer) return false;
  const url = normalize(referrer);
  if (!url) return false;
  return rules.some((rule) => ('exact' in rule ? url === rule.exact : url.startsWith(rule.prefix)));
}
